"""The files of a ``predict`` run, ``<run folder>/predictions/``: CSV rows, text lines, PNG images."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import numpy as np
from PIL import Image


class PredictionSink:
    """Files of one ``predict`` run under ``folder`` (``<run folder>/predictions``).

    Tasks write through it (:meth:`~framework.tasks.Task.write_predictions`): rows of a CSV
    file with a header, lines of a text file, or one PNG image per example. ``index`` counts
    the examples written so far, so rows and images are numbered in the order of the
    predicted split. Under DDP each process writes files of its own (``.rank<k>`` suffix). A
    write that fails (a full disk) removes the files written so far and names the file.
    """

    def __init__(self, folder: Path, rank: int = 0, world_size: int = 1) -> None:
        self.folder, self.index = folder, 0
        self.suffix = f".rank{rank}" if world_size > 1 else ""
        self.written: list[Path] = []

    def _path(self, name: str) -> Path:
        stem, dot, extension = name.rpartition(".")
        path = self.folder / f"{stem}{self.suffix}{dot}{extension}"
        if path not in self.written:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.unlink(missing_ok=True)
            self.written.append(path)
        return path

    @contextmanager
    def _writing(self, name: str) -> Iterator[Path]:
        """The path of the file ``name``, to write into. When the write fails (a full disk), every
        file of this run's predictions is removed, as the predictions are incomplete, and the
        operating system's error names the file."""
        path = self._path(name)
        try:
            yield path
        except OSError as error:
            for written in self.written:
                written.unlink(missing_ok=True)
            if error.filename or error.errno is None:
                raise
            raise OSError(error.errno, error.strerror, str(path)) from error

    def rows(self, name: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Append ``rows`` to the CSV file ``name`` (the header is written first)."""
        with self._writing(name) as path:
            new = not path.exists()
            with open(path, "a", newline="") as f:
                writer = csv.writer(f)
                if new:
                    writer.writerow(header)
                writer.writerows(rows)

    def lines(self, name: str, lines: Iterable[str]) -> None:
        """Append lines to the text file ``name``."""
        with self._writing(name) as path, open(path, "a") as f:
            f.writelines(f"{line}\n" for line in lines)

    def image(self, name: str, image: np.ndarray, palette: Optional[np.ndarray] = None) -> None:
        """One PNG: (H, W, 3) uint8, or (H, W) labels with a (K, 3) uint8 ``palette`` (a paletted PNG
        whose pixel values are the labels)."""
        with self._writing(name) as path:
            if palette is None:
                Image.fromarray(image).save(path)
                return
            picture = Image.fromarray(image.astype(np.uint8), mode="P")
            picture.putpalette(palette.astype(np.uint8).flatten().tolist())
            picture.save(path)

    def take(self, count: int) -> range:
        """The indices of the next ``count`` examples."""
        start, self.index = self.index, self.index + count
        return range(start, self.index)
