"""A full disk, in the runs folder or the cache: every writer of the framework's files stops in one
line that names the file (or the cache entry) and leaves no partial file; a file it replaces keeps
its previous content.

The disk is a fake one (:class:`FullDisk`): files opened for writing under a folder, by Python's
``open`` (which the framework's writers, Lightning's, PIL's and fsspec's all use), share a number of
bytes, after which a write stores what still fits and fails with ENOSPC, as the system's does.
The writers are declared once (:data:`WRITERS`).
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from framework.__main__ import main
from framework.checkpoint import AtomicCheckpointIO
from framework.data import load_or_rebuild
from framework.errors import explain, user_error
from framework.runs import PredictionSink, write_json_atomically
from tests.conftest import small_demo


class FullDisk:
    """Files opened for writing under ``folder`` take ``room`` bytes in all; then writes fail."""

    def __init__(self, folder: Path, room: int) -> None:
        self.folder, self.room = Path(folder).resolve(), room
        self.real_open = builtins.open

    def open(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        opened = self.real_open(file, mode, *args, **kwargs)
        writing = any(flag in mode for flag in "wax+")
        inside = isinstance(file, (str, os.PathLike)) and Path(os.path.abspath(file)).is_relative_to(self.folder)
        return Filling(opened, self) if writing and inside else opened


class Filling:
    """A file on a :class:`FullDisk`: a write stores what still fits, then fails as the system's does."""

    def __init__(self, file: Any, disk: FullDisk) -> None:
        self.file, self.disk = file, disk

    def write(self, data: Any) -> int:
        fits = max(0, min(len(data), self.disk.room))
        self.file.write(data[:fits])
        self.disk.room -= fits
        if fits < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return len(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.file, name)

    def __enter__(self) -> Filling:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.file.close()

    def __iter__(self):
        return iter(self.file)


@pytest.fixture
def full_disk(monkeypatch) -> Callable[[Path, int], FullDisk]:
    def fill(folder: Path, room: int) -> FullDisk:
        disk = FullDisk(folder, room)
        monkeypatch.setattr(builtins, "open", disk.open)
        return disk

    return fill


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def pyg_like_entry(folder: Path) -> Any:
    """A cache entry made as PyG makes its processed files: torch.save into memory, then one write."""

    def load() -> Any:
        if not (folder / "data.pt").exists():
            folder.mkdir(parents=True, exist_ok=True)
            buffer = io.BytesIO()
            torch.save({"x": torch.zeros(1000)}, buffer)
            with open(folder / "data.pt", "wb") as f:
                f.write(buffer.getvalue())
        return torch.load(folder / "data.pt", weights_only=True)

    return load_or_rebuild(folder, load)


#: writer -> (what is there before, the write that fills the disk, the file the message names), each
#: given the folder on the disk.
WRITERS: dict[str, tuple[Callable[[Path], Any], Callable[[Path], Any], Callable[[Path], Path]]] = {
    "summary.json": (
        lambda root: write_json_atomically(root / "summary.json", {"fit": {"epochs": 1}}),
        lambda root: write_json_atomically(root / "summary.json", {"fit": {"history": list(range(10_000))}}),
        lambda root: root / "summary.json",
    ),
    "checkpoint": (
        lambda root: AtomicCheckpointIO().save_checkpoint({"step": 1}, root / "checkpoints" / "last.ckpt"),
        lambda root: AtomicCheckpointIO().save_checkpoint(
            {"step": 2, "state_dict": {"w": torch.zeros(10_000)}}, root / "checkpoints" / "last.ckpt"
        ),
        lambda root: root / "checkpoints" / "last.ckpt",
    ),
    "predictions (rows)": (
        lambda root: None,
        lambda root: PredictionSink(root / "predictions").rows("predictions.csv", ["x"], ([i] for i in range(10_000))),
        lambda root: root / "predictions" / "predictions.csv",
    ),
    "predictions (lines)": (
        lambda root: None,
        lambda root: PredictionSink(root / "predictions").lines("translations.txt", map(str, range(10_000))),
        lambda root: root / "predictions" / "translations.txt",
    ),
    "predictions (images)": (
        lambda root: None,
        lambda root: PredictionSink(root / "predictions").image(
            "masks/0.png", np.arange(64 * 64 * 3, dtype=np.uint8).reshape(64, 64, 3)
        ),
        lambda root: root / "predictions" / "masks" / "0.png",
    ),
    "cache entry": (lambda root: None, lambda root: pyg_like_entry(root / "entry"), lambda root: root / "entry"),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_full_disk_stops_a_writer_in_one_line_naming_the_file_and_leaves_no_partial_file(tmp_path, full_disk, writer):
    before, write, named = WRITERS[writer]
    before(tmp_path)
    kept = files(tmp_path)
    full_disk(tmp_path, room=100)
    with pytest.raises(Exception) as stopped:
        write(tmp_path)
    found = user_error(stopped.value)
    assert found is not None, f"{type(stopped.value).__name__}: {stopped.value}"
    lines = explain(found).splitlines()
    assert len(lines) <= 2 and str(named(tmp_path)) in lines[0], lines
    assert "no space left on" in lines[0].lower(), lines
    assert files(tmp_path) == kept, "a partial file is left, or the previous one changed"


def test_a_full_disk_that_names_no_file_is_one_line_too():
    found = user_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    assert found is not None and explain(found) == (
        "error: no space left on the device (while writing a file the system does not name)"
    )


DEMO = small_demo()


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.slow
def test_a_full_runs_folder_is_one_line_and_leaves_no_run_folder(capsys, monkeypatch, full_disk):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)
    runs = Path(os.environ["FRAMEWORK_RUNS_DIR"])
    full_disk(runs, room=0)
    with pytest.raises(SystemExit) as stop:
        main(["fit", *DEMO])
    assert stop.value.code == 1
    assert "no space left on the device" in one_error_line(capsys)
    assert not [p for p in runs.rglob("*") if p.is_file()]


@pytest.mark.slow
def test_predictions_on_a_full_disk_are_one_line_and_leave_no_partial_file(capsys, monkeypatch, full_disk, tmp_path):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)
    checkpoint = Path(main(["fit", *DEMO]).trainer.checkpoint_callback.best_model_path)
    run = tmp_path / "predict"
    full_disk(run / "predictions", room=100)
    with pytest.raises(SystemExit) as stop:
        main(["predict", *DEMO, f"--run_dir={run}", "--ckpt_path", str(checkpoint)])
    assert stop.value.code == 1
    assert one_error_line(capsys) == f"error: no space left on the device: {run / 'predictions' / 'predictions.csv'}"
    assert not [p for p in (run / "predictions").rglob("*") if p.is_file()]
