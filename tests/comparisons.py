"""What the compare tests share: the tiny demo and where a comparison's folder is."""

from __future__ import annotations

import os
from pathlib import Path

from framework.commands.compare import main as compare_main
from framework.commands.compare import results

#: The demo, tiny: a run (fit + test) takes a few seconds.
DEMO = [
    "--config",
    "domains/demo/demo.yaml",
    "--config",
    "configs/logger/csv.yaml",
    "--data.train_size=128",
    "--data.val_size=32",
    "--data.test_size=32",
    "--trainer.max_epochs=2",
    "--trainer.enable_model_summary=false",
    "--attention_maps.every_n_epochs=0",
]


def compare(*args: str) -> results.Summary:
    return compare_main([*DEMO, *args])


def folder(name: str) -> Path:
    return Path(os.environ["FRAMEWORK_RUNS_DIR"]).resolve() / "compare" / name
