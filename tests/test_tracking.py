"""W&B without an account: offline into the run folder, metrics, full config and attention images."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from framework.cli import main
from tests.wandb_records import config, history

SMALL = [
    "--config", "configs/demo.yaml",
    "--data.train_size=256", "--data.val_size=64", "--data.test_size=64", "--data.batch_size=32",
    "--trainer.max_epochs=2", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
]


def test_wandb_runs_offline_into_the_run_folder_with_metrics_config_and_maps(caplog):
    with caplog.at_level(logging.INFO):
        cli = main(["fit", *SMALL])
    run = Path(cli.trainer.default_root_dir)
    (log,) = run.glob("wandb/offline-run-*/run-*.wandb")
    assert sum("logged offline" in r.getMessage() for r in caplog.records) == 1

    steps = history(log)
    val_acc = [float(s["val/acc"]) for s in steps if "val/acc" in s]
    assert len(val_acc) == 2 and all(0.0 <= a <= 1.0 for a in val_acc)
    assert any("train/loss_epoch" in s and "train/acc" in s for s in steps)

    # The full resolved config, not only flat hyper-parameters.
    cfg = config(log)
    assert json.loads(cfg["model"])["class_path"] == "framework.demo.SequenceClassifier"
    assert json.loads(cfg["task"])["init_args"]["num_classes"] == 10
    assert json.loads(cfg["trainer"])["max_epochs"] == 2
    assert json.loads(cfg["optimizer"])["init_args"]["lr"] == 0.003

    maps = list(log.parent.glob("files/media/images/attention/*.png"))
    assert {p.name.split("_")[0] for p in maps} == {"encoder.layers.0.attention", "encoder.layers.1.attention"}


def test_wandb_mode_disabled_is_honoured(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    cli = main(["fit", *SMALL, "--trainer.max_epochs=1"])
    assert not list(Path(cli.trainer.default_root_dir).glob("wandb/offline-run-*"))
