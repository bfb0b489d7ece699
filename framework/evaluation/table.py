"""The evaluation's one table: rows of (test, block, setting, measure, value, baseline), printed,
written as CSV into the run folder and sent to W&B as a table."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Optional

from ..runs.files import atomic_file

COLUMNS = ("test", "block", "setting", "measure", "value", "baseline", "against")


class Row(NamedTuple):
    """One figure of the evaluation.

    test: ``ablation``, ``permutation``, ``erasure``, ``attribution``, ``intrinsic`` ...;
    block: the blocks or the view measured; setting: the mode, k, method or group; measure:
    what ``value`` is; baseline: the figure it is read against, and ``against`` what that is
    (``plain`` for the unablated run, ``random-k`` for erasing random items, ``uniform`` for
    uniform attention ...).
    """

    test: str
    block: str
    setting: str
    measure: str
    value: Optional[float]
    baseline: Optional[float] = None
    against: str = ""


def _number(value: Optional[float]) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4f}"


def format_table(rows: Sequence[Row]) -> str:
    """The rows as an aligned text table with a header line."""
    cells = [list(COLUMNS[:5]) + ["baseline"]]
    for row in rows:
        if row.baseline is None:
            baseline = row.against
        else:
            baseline = f"{_number(row.baseline)} ({row.against})" if row.against else _number(row.baseline)
        cells.append([row.test, row.block, row.setting, row.measure, _number(row.value), baseline])
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def as_records(rows: Iterable[Row]) -> list[list[Any]]:
    """Rows as lists of plain values: numbers rounded to 6 digits, a missing value or NaN as None
    (an empty CSV cell; W&B tables need one type per column, None allowed)."""

    def plain(value: Any) -> Any:
        if isinstance(value, float):
            return None if math.isnan(value) else round(value, 6)
        return value

    return [[plain(v) for v in row] for row in rows]


def write_csv(rows: Sequence[Row], path: Path) -> Path:
    """``evaluation.csv``: the columns of :data:`COLUMNS`, one line per row."""
    with atomic_file(path, "w", newline="") as handle:  # the atlas takes a written table for a finished evaluation
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(as_records(rows))
    return path


def log_table(rows: Sequence[Row], loggers: Iterable[Any], key: str = "evaluation") -> None:
    """Send the rows to every logger that takes tables (W&B's ``log_table``)."""
    for logger in loggers:
        if hasattr(logger, "log_table"):
            logger.log_table(key=key, columns=list(COLUMNS), data=as_records(rows))
