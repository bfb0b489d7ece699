"""Pictures drawn in a process of their own, so that training goes on while they are drawn.

Building a matplotlib figure, rasterising it (text layout, the constrained layout's passes, Agg)
and encoding it as PNG (what ``wandb.Image`` does with an array) cost about 0.3-0.6 s a picture
on a CPU core: 3-5 s for the ten pictures a validation of the ``make fit`` model logs, most of
what ``fit`` spent beyond training (``python -m tools.bench_overhead``). :class:`Drawer` sends
the pictures, pickled, to one drawing process (``python -m framework.drawing``), which builds
them (sketches of :mod:`framework.pictures`: a picture function and its inputs on the CPU;
figures arrive built) and writes them as PNG files. A :class:`Job` gives the files (which W&B
takes as they are) or the (H, W, 3) uint8 arrays read back: the same pixels as
:func:`~framework.pictures.as_image` gives in this process. The ``attention_maps`` callback logs
them when they are done, at the step of the metrics of the validation that drew them.

The process imports matplotlib and PIL, and torch only when the first sketch arrives (this
module imports neither torch nor Lightning; of the framework, only :mod:`framework.warm_process`,
which imports the standard library alone).

Nothing is lost: a picture that does not pickle, a job not done within its wait, and every job
after the drawing process ended (it is said once) are drawn in this process instead.

The pipes and their frames are :mod:`framework.warm_process`'s (the process is its warm process;
closed, it ends at the end of its input); each frame is a pickle: to the process
``(ticket, [pictures])``, back ``(ticket, [PNG files] or None)`` (None: it could not draw them).
"""

from __future__ import annotations

import atexit
import io
import itertools
import os
import pickle
import shutil
import signal
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .warm_process import Child, WarmProcess

PNG_LEVEL = 1  # zlib level of the PNG files: 8x faster to write than PIL's 6, about 15 % larger


def rasterise(figure: Any) -> np.ndarray:
    """A matplotlib figure as an (H, W, 3) uint8 array, drawn on an Agg canvas."""
    if not hasattr(figure.canvas, "buffer_rgba"):  # an unpickled figure comes with a blank canvas
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure)
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())[..., :3].copy()


def built(picture: Any) -> Any:
    """The figure of a picture: a figure as it is, a sketch of :mod:`framework.pictures` built
    (read by its ``build`` method: this module imports nothing of the framework)."""
    return picture.build() if hasattr(picture, "build") else picture


def pixels(picture: Any) -> np.ndarray:
    """A picture as an (H, W, 3) uint8 array: a figure or sketch rasterised, a gathered picture of
    :mod:`framework.pictures` drawn (its ``image`` method), an array as it is."""
    if hasattr(picture, "image"):
        return picture.image()
    if hasattr(picture, "build") or hasattr(picture, "canvas"):
        return rasterise(built(picture))
    return np.asarray(picture, dtype=np.uint8)


class Job:
    """The pictures of one :meth:`Drawer.submit`, being drawn: PNG files the drawing process
    writes, or, where it cannot, arrays rasterised here."""

    def __init__(self, figures: list) -> None:
        self.figures: Optional[list] = figures  # kept until drawn, to draw them here if the process cannot
        self._drawn = threading.Event()
        self._files: Optional[list[Path]] = None
        self._images: Optional[list[np.ndarray]] = None

    @classmethod
    def ready(cls, images: list[np.ndarray]) -> Job:
        """A job whose pictures were arrays already (nothing to draw, no files)."""
        job = cls([])
        job._images = list(images)
        job._drawn.set()
        return job

    def finish(self, files: Optional[list[str]]) -> None:
        """The drawing process's PNG files, or None: :meth:`images` rasterises the figures here."""
        self._files = None if files is None else [Path(f) for f in files]
        self._drawn.set()

    def done(self) -> bool:
        return self._drawn.is_set()

    @property
    def by_process(self) -> bool:
        """Whether the drawing process drew them."""
        return self._files is not None

    def files(self, timeout: Optional[float] = None) -> Optional[list[Path]]:
        """The PNG files, waiting up to ``timeout`` seconds (None: as long as it takes); None when
        the drawing process has not drawn them by then."""
        return self._files if self._drawn.wait(timeout) else None

    def images(self, timeout: Optional[float] = None) -> list[np.ndarray]:
        """The (H, W, 3) uint8 arrays: the drawing process's files read (waiting up to ``timeout``
        seconds), or the figures rasterised here."""
        if self._images is None:
            files = self.files(timeout)
            if files is None:
                self._images = [pixels(picture) for picture in self.figures or []]
            else:
                from PIL import Image

                self._images = []
                for file in files:
                    with Image.open(file) as image:
                        self._images.append(np.asarray(image.convert("RGB")))
            self.figures = None
        return self._images

    def discard(self) -> None:
        """Delete the files (once the loggers have copied them)."""
        for file in self._files or []:
            file.unlink(missing_ok=True)


class Drawer:
    """One drawing process (a :class:`~framework.warm_process.WarmProcess`, fed and read by its two
    threads), started at the first :meth:`submit`, and again at the first after :meth:`close`.

    Use the process's own through :func:`drawer`; :meth:`close` ends the process (at exit too).
    """

    def __init__(self) -> None:
        self._process: Optional[WarmProcess] = None
        self._failed = False
        self._unpicklable = False  # said once
        self._jobs: dict[int, Job] = {}
        self._tickets = itertools.count()
        self._lock = threading.Lock()
        self._folder: Optional[Path] = None  # where the process writes its PNG files

    def submit(self, figures: list) -> Job:
        """Start drawing ``figures`` (matplotlib figures, sketches or gathered pictures of
        :mod:`framework.pictures`, which the process builds); the job's files and arrays keep
        their order."""
        job = Job(list(figures))
        try:
            payload = pickle.dumps(job.figures, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # noqa: BLE001 - whatever a picture holds that does not pickle: drawn here
            if not self._unpicklable:
                self._unpicklable = True
                warnings.warn(
                    f"pictures that do not pickle are drawn in the training process ({error})",
                    RuntimeWarning,
                    stacklevel=2,
                )
            job.finish(None)
            return job
        with self._lock:
            if self._failed or not self._start():
                job.finish(None)
                return job
            ticket = next(self._tickets)
            self._jobs[ticket] = job
            self._process.send(pickle.dumps(ticket) + payload)
        return job

    def _start(self) -> bool:
        """Start the drawing process unless it runs (with the lock held: its reader's calls wait)."""
        if self._process is not None:
            return True
        self._folder = Path(tempfile.mkdtemp(prefix="framework-drawing-"))
        process = WarmProcess(
            "framework.drawing",
            [str(self._folder)],
            env={**os.environ, "MPLBACKEND": "Agg"},
            on_message=self._drawn,
            on_exit=lambda status: self._ended(process, status),
            name="drawing",
        )
        try:
            process.start()
        except OSError as error:
            self._fail(f"it could not start ({error})")
            shutil.rmtree(self._folder, ignore_errors=True)
            return False
        self._process = process
        return True

    def _drawn(self, frame: bytes) -> None:
        """An answer of the drawing process: a job's PNG files (in its reader thread)."""
        ticket, files = pickle.loads(frame)
        with self._lock:
            job = self._jobs.pop(ticket)
        job.finish(files)

    def _ended(self, process: WarmProcess, status: int) -> None:
        """The drawing process ended (in its reader thread, after its last answer)."""
        if status and status != -signal.SIGTERM:
            self._fail(f"it ended with status {status}")
        with self._lock:  # what it had not drawn is drawn where it is waited for
            jobs, self._jobs = list(self._jobs.values()), {}
            self._failed = self._failed or self._process is process
        for job in jobs:
            job.finish(None)

    def _fail(self, why: str) -> None:
        if not self._failed:
            self._failed = True
            warnings.warn(
                f"the drawing process of the pictures failed: {why}; they are drawn in the training "
                "process from now on",
                RuntimeWarning,
                stacklevel=2,
            )

    def cpu_seconds(self) -> float:
        """The CPU time the drawing process has used so far, user and system (0 while there is none);
        ``tools/bench_overhead.py`` reports it beside the training process's time."""
        import psutil

        process = self._process
        try:
            times = psutil.Process(process.pid).cpu_times() if process is not None else None
        except psutil.Error:  # it has just ended
            return 0.0
        return times.user + times.system if times is not None else 0.0

    def close(self) -> None:
        """End the drawing process (jobs not done yet are drawn where they are waited for)."""
        with self._lock:
            process, folder, self._process = self._process, self._folder, None
        if process is None:
            return
        process.close(grace=10)  # it ends at the end of its input; killed after 10 s
        shutil.rmtree(folder, ignore_errors=True)


_drawer: Optional[Drawer] = None


def drawer() -> Drawer:
    """This process's :class:`Drawer` (closed at exit)."""
    global _drawer
    if _drawer is None:
        _drawer = Drawer()
        atexit.register(_drawer.close)
    return _drawer


def serve(child: Child, folder: Path) -> None:
    """The drawing process: each job's figures rasterised into PNG files in ``folder``
    (``<ticket>-<k>.png``), until the training process closes its end of the pipe."""
    from PIL import Image

    for frame in child.messages():
        unpickler = pickle.Unpickler(io.BytesIO(frame))
        ticket = unpickler.load()
        try:
            files = []
            for k, picture in enumerate(unpickler.load()):
                files.append(str(folder / f"{ticket}-{k}.png"))
                Image.fromarray(pixels(picture)).save(files[-1], compress_level=PNG_LEVEL)
        except Exception:  # noqa: BLE001 - the training process draws them and sees the error itself
            files = None
        child.reply(pickle.dumps((ticket, files)))


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops training; the process ends with its pipe
    child = Child()
    serve(child, Path(child.args[0]))
