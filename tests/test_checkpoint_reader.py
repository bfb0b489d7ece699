"""Files by what they are: every kind of file that is no checkpoint of this framework, declared
once (:data:`KINDS`), is refused by the one reader (``framework.checkpoint.read_checkpoint``) in
one line that names the file and says what it is, never with torch's advice to load it unsafely,
and nothing in it is run. tests/test_checkpoint_faults.py gives these kinds to every command.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
import torch

from framework.checkpoint import AtomicCheckpointIO, read_checkpoint, read_checkpoint_configs
from framework.errors import CheckpointError

ROOT = Path(__file__).resolve().parents[1]


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def first_weight(checkpoint: dict) -> str:
    return next(name for name in checkpoint["state_dict"] if name.endswith("weight"))


def edited(change: Callable[[dict], None]) -> Callable[[Path, Path], None]:
    """A kind made by changing a good checkpoint's content."""

    def damage(good: Path, out: Path) -> None:
        checkpoint = torch.load(good, weights_only=True)
        change(checkpoint)
        torch.save(checkpoint, out)

    return damage


def non_finite(checkpoint: dict) -> None:
    checkpoint["state_dict"][first_weight(checkpoint)][0] = float("nan")


def flipped(data: bytes) -> bytes:
    """``data`` with one byte in its middle changed (inside a tensor's bytes, for a checkpoint)."""
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]


def safetensors_file(out: Path) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    out.write_bytes(len(header).to_bytes(8, "little") + header + b"\0\0\0\0")


def zip_of(out: Path, name: str) -> None:
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(name, "x")


def npy(out: Path) -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(3))
    out.write_bytes(buffer.getvalue())


#: kind -> (how to make it from a good checkpoint at ``out``, returning another path to give where
#: it is no file there; what the message says after the file's name, ``{first_weight}`` being the
#: good checkpoint's first weight).
KINDS: dict[str, tuple[Callable[[Path, Path], Optional[Path]], str]] = {
    "missing": (lambda good, out: None, ": no such file"),
    "folder": (lambda good, out: out.mkdir(), "is a folder, not a checkpoint file"),
    "/dev/null": (lambda good, out: Path(os.devnull), "is a character device, not a checkpoint file"),
    "empty": (lambda good, out: out.write_bytes(b""), "is empty (0 bytes)"),
    "YAML config": (
        lambda good, out: out.write_text((ROOT / "domains/demo/demo.yaml").read_text()),
        "is a YAML file (its keys: seed_everything, model, task, data), not a checkpoint: a config is given with "
        "--config",
    ),
    "JSON file": (lambda good, out: out.write_text('{"loss": 0.5}'), "is a JSON file (its keys: loss)"),
    "text": (
        lambda good, out: out.write_text("not a checkpoint\n"),
        "is a text file, not a checkpoint (it begins 'not a checkpoint')",
    ),
    "truncated": (
        lambda good, out: out.write_bytes(good.read_bytes()[: good.stat().st_size // 2]),
        "is a torch file cut short or damaged",
    ),
    "broken zip": (lambda good, out: out.write_bytes(b"PK\x03\x04broken zip"), "is a zip archive cut short or damaged"),
    "zip of other files": (lambda good, out: zip_of(out, "notes.txt"), "is a zip archive of other files (notes.txt)"),
    "a byte altered": (
        lambda good, out: out.write_bytes(flipped(good.read_bytes())),
        "is a damaged torch file: its part",
    ),
    "malicious pickle": (
        lambda good, out: out.write_bytes(pickle.dumps({"hyper_parameters": Evil()})),
        f"is a pickle that refers to {os.system.__module__}.system, code that loading it would run (it was not loaded)",
    ),
    "torch file of other objects": (
        lambda good, out: torch.save({"state_dict": {}, "path": Path("x")}, out),
        f"is a torch file that refers to {type(Path('x')).__module__}.{type(Path('x')).__name__}",
    ),
    "pickle of a list": (lambda good, out: out.write_bytes(pickle.dumps([1, 2])), "is a pickle of a list"),
    "pickle cut short": (
        lambda good, out: out.write_bytes(pickle.dumps({"a": list(range(100))})[:50]),
        "is a pickle cut short or damaged",
    ),
    "bare state dict": (
        lambda good, out: torch.save({"w": torch.zeros(2)}, out),
        "is a torch file of a bare state dict (tensors alone), not a checkpoint",
    ),
    "a list of tensors": (lambda good, out: torch.save([torch.zeros(2)], out), "is a torch file of a list"),
    "another program's": (
        lambda good, out: torch.save({"state_dict": {"w": torch.zeros(2)}}, out),
        "was not written by this framework's CLI",
    ),
    "gzip": (lambda good, out: out.write_bytes(gzip.compress(b"x")), "is a gzip file, not a checkpoint"),
    "NumPy array": (lambda good, out: npy(out), "is a NumPy array file (.npy)"),
    "HDF5": (lambda good, out: out.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64)), "is an HDF5 file"),
    "safetensors": (lambda good, out: safetensors_file(out), "is a safetensors file, not a checkpoint"),
    "binary": (lambda good, out: out.write_bytes(bytes(range(1, 64))), "a binary file of another kind"),
    "non-finite weights": (
        edited(non_finite),
        "holds weights with NaN or infinite values ({first_weight})",
    ),
}
#: What no message may say: torch's advice to turn the safe load off.
ADVICE = ("weights_only", "trusted source", "add_safe_globals")


def make(kind: str, good: Path, out: Path) -> tuple[Path, str]:
    """The file of ``kind`` (made from ``good`` at ``out``) and what its message must say."""
    build, expected = KINDS[kind]
    made = build(good, out)
    path = made if isinstance(made, Path) else out
    return path, expected.format(first_weight=first_weight(torch.load(good, weights_only=True)))


@pytest.fixture
def good(tmp_path) -> Path:
    """A checkpoint of the framework's form: a state dict and the model and task configs."""
    path = tmp_path / "good.ckpt"
    state = {"model.encoder.weight": torch.randn(64, 64), "model.encoder.bias": torch.zeros(64)}
    configs = {"model": {"class_path": "my.Model"}, "task": {"class_path": "my.Task"}}
    torch.save({"state_dict": state, "hyper_parameters": configs, "data_config": {"class_path": "my.Data"}}, path)
    return path


def test_a_checkpoint_of_the_framework_is_read(good):
    assert read_checkpoint(good)["state_dict"]["model.encoder.bias"].shape == (64,)
    assert read_checkpoint_configs(good)["data"] == {"class_path": "my.Data"}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_file_that_is_no_checkpoint_is_said_for_what_it_is(good, tmp_path, capfd, kind):
    path, expected = make(kind, good, tmp_path / "given.ckpt")
    with pytest.raises(CheckpointError) as refused:
        read_checkpoint(path, "--ckpt_path")
    message = str(refused.value)
    assert message.startswith(f"--ckpt_path {path}") and expected in message, message
    assert "\n" not in message and not any(advice in message for advice in ADVICE), message
    assert "pwned" not in capfd.readouterr().out


@pytest.mark.parametrize("kind", ["truncated", "non-finite weights", "YAML config"])
def test_the_trainers_loads_go_through_the_reader(good, tmp_path, kind):
    path, expected = make(kind, good, tmp_path / "given.ckpt")
    with pytest.raises(CheckpointError, match="^the checkpoint .*" + expected.split("(")[0]):
        AtomicCheckpointIO().load_checkpoint(path)
