"""Shared test set-up: real data from ../shared/data, hermetic W&B, run folders in tmp."""

from __future__ import annotations

import os
import random
from pathlib import Path

import lightning.pytorch  # noqa: F401  (its log handlers take sys.stderr when imported: before a test's capsys swaps it)
import numpy as np
import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

if SHARED_DATA.is_dir():
    os.environ.setdefault("FRAMEWORK_DATA_DIR", str(SHARED_DATA))


#: Every device of this machine: the CPU always, CUDA where a GPU is present. A test that takes a
#: ``device`` argument runs once per device (ids ``[cpu]``, ``[cuda]``), so the suite checks the GPU
#: path on any machine that has one; ``pytest -k cuda`` is that lane alone (``make test-gpu``).
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)


def accelerator(device: str) -> str:
    """Lightning's ``trainer.accelerator`` for a test device."""
    return "gpu" if device == "cuda" else device


#: One training, validation and test batch with loggers and checkpoints on (``fast_dev_run`` turns the
#: loggers off, and with them the pictures), and a logger that keeps the pictures it is given.
ONE_BATCH = [
    "--trainer.fast_dev_run=false",
    "--trainer.max_epochs=1",
    "--trainer.limit_train_batches=1",
    "--trainer.limit_val_batches=1",
    "--trainer.limit_test_batches=1",
    "--trainer.num_sanity_val_steps=0",
    "--trainer.logger=tests.image_logger.ImageLogger",
]


def demo_config() -> dict:
    """The demo's experiment config with its data section read in, to be changed and written
    elsewhere by a test (the file names its data config relative to its own folder)."""
    config = yaml.safe_load((ROOT / "domains/demo/demo.yaml").read_text())
    config["data"] = yaml.safe_load((ROOT / "domains/demo" / config["data"]).read_text())
    return config


def small_demo() -> list[str]:
    """The demo's flags for a fit of seconds: the CSV logger, 64 training, 32 validation and 32 test
    examples in batches of 32, one epoch, no progress bar or model summary (later flags win)."""
    return [
        *("--config", "domains/demo/demo.yaml", "--config", "configs/logger/csv.yaml"),
        *("--data.train_size=64", "--data.val_size=32", "--data.test_size=32", "--data.batch_size=32"),
        *("--trainer.max_epochs=1", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"),
    ]


def on(device: str, *items):
    """Models and batches (tensors, mappings, tuples, graph ``Data``) moved to ``device``."""
    from lightning.pytorch.utilities import move_data_to_device

    moved = tuple(move_data_to_device(item, device) for item in items)
    return moved if len(moved) > 1 else moved[0]


@pytest.fixture
def shared_data():
    """Path of a folder of the real data sets; skips, saying why, when it is absent."""

    def folder(name: str) -> Path:
        path = Path(os.environ.get("FRAMEWORK_DATA_DIR", SHARED_DATA)) / name
        if not path.is_dir():
            pytest.skip(f"real data set {name} not found at {path} (set FRAMEWORK_DATA_DIR to ../shared/data)")
        return path

    return folder


def make_hermetic(patch: pytest.MonkeyPatch, tmp_path_factory) -> None:
    """No W&B account, no W&B files outside tmp, runs and caches (ours, TorchInductor's, Triton's)
    under tmp, no inherited run folder or W&B service (an in-process ``wandb.init`` publishes its
    service in ``WANDB_SERVICE``: a fit in a child process would share it, and the run of a child
    killed with SIGKILL would stay open there, refusing its resume), and errors raised as they are
    (the one-line messages of the command line are tested in test_bad_inputs.py)."""
    home = tmp_path_factory.mktemp("wandb-home")
    for key in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_SERVICE", "FRAMEWORK_RUN_DIR"):
        patch.delenv(key, raising=False)
    patch.setenv("FRAMEWORK_TRACEBACK", "1")
    compiled = tmp_path_factory.getbasetemp() / "compiled"
    patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(compiled / "inductor"))
    patch.setenv("TRITON_CACHE_DIR", str(compiled / "triton"))
    patch.setenv("WANDB_CONFIG_DIR", str(home))
    patch.setenv("WANDB_CACHE_DIR", str(home))
    patch.setenv("WANDB_DATA_DIR", str(home))
    patch.setenv("NETRC", str(home / "netrc"))
    patch.setenv("FRAMEWORK_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
    patch.setenv("FRAMEWORK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    patch.chdir(ROOT)


@pytest.fixture(scope="session", autouse=True)
def hermetic_session(tmp_path_factory):
    """:func:`make_hermetic` for the whole session: what module and session fixtures run (set up
    before a test's own :func:`hermetic`) is hermetic too."""
    with pytest.MonkeyPatch.context() as patch:
        make_hermetic(patch, tmp_path_factory)
        yield


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory, monkeypatch):
    """:func:`make_hermetic` for each test: its own runs folder, no W&B service of an earlier test,
    and the random streams (torch's, numpy's, Python's) seeded 0, so that a test draws the same
    numbers whatever ran before it in its process."""
    make_hermetic(monkeypatch, tmp_path_factory)
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
