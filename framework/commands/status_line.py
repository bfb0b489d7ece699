"""One live status line for a long command (a comparison's grid, an evaluation's tests).

On a terminal the status is a tqdm bar redrawn in place every second, below the lines the
command prints through :meth:`StatusLine.print`. Elsewhere (a log file, a CI job) the same
status is printed as a plain line every ``every`` seconds, so that a log shows how far the
command got without carriage returns.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Optional, TextIO

from tqdm import tqdm

#: Seconds between two redraws of the bar on a terminal.
REDRAW = 1.0


class StatusLine:
    """The status ``describe()`` (a function: it is called again at every redraw) with a bar of
    ``total`` units that :meth:`advance` fills. A context manager; :meth:`close` ends it."""

    def __init__(
        self, describe: Callable[[], str], total: int, every: float = 30.0, stream: Optional[TextIO] = None
    ) -> None:
        self.describe, self.stream = describe, stream or sys.stdout
        terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar = (
            tqdm(total=total, file=self.stream, bar_format="|{bar:12}| {desc}", dynamic_ncols=True, leave=False)
            if terminal
            else None
        )
        self._stopped = threading.Event()
        period = REDRAW if terminal else every
        self._ticker = threading.Thread(target=self._tick, args=(period,), daemon=True) if period > 0 else None
        if self._ticker is not None:
            self._ticker.start()

    def _tick(self, period: float) -> None:
        while not self._stopped.wait(period):
            self.refresh()

    def refresh(self) -> None:
        """Redraw the bar, or print the status as a line."""
        text = self.describe()
        if self.bar is not None:
            self.bar.set_description_str(text, refresh=True)
        else:
            print(text, file=self.stream, flush=True)

    def print(self, line: str) -> None:
        """A line of the command's output, above the bar."""
        if self.bar is not None:
            self.bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def advance(self, units: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(units)

    def close(self) -> None:
        self._stopped.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()

    def __enter__(self) -> StatusLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2 h 05 min``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"
