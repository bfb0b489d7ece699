"""Shared test set-up: real data from ../shared/data, hermetic W&B, run folders in tmp."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

if SHARED_DATA.is_dir():
    os.environ.setdefault("FRAMEWORK_DATA_DIR", str(SHARED_DATA))


@pytest.fixture
def shared_data():
    """Path of a folder of the real data sets; skips, saying why, when it is absent."""

    def folder(name: str) -> Path:
        path = Path(os.environ.get("FRAMEWORK_DATA_DIR", SHARED_DATA)) / name
        if not path.is_dir():
            pytest.skip(f"real data set {name} not found at {path} (set FRAMEWORK_DATA_DIR to ../shared/data)")
        return path

    return folder


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory, monkeypatch):
    """No W&B account, no W&B files outside tmp, runs and caches under tmp, no inherited run folder."""
    home = tmp_path_factory.mktemp("wandb-home")
    for key in ("WANDB_API_KEY", "WANDB_MODE", "FRAMEWORK_RUN_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(home))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(home))
    monkeypatch.setenv("WANDB_DATA_DIR", str(home))
    monkeypatch.setenv("NETRC", str(home / "netrc"))
    monkeypatch.setenv("FRAMEWORK_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
    monkeypatch.setenv("FRAMEWORK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.chdir(ROOT)
