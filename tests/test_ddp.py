"""Data-parallel fit: two CPU processes (gloo) launched by Lightning from one command."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from framework import TaskModule

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end


def test_two_process_ddp_fit_finishes_on_both_ranks_and_its_checkpoint_loads(tmp_path):
    run = tmp_path / "ddp-run"
    command = [
        sys.executable,
        "-m",
        "framework",
        "fit",
        "--config",
        "domains/demo/demo.yaml",
        "--config",
        "configs/trainer/ddp.yaml",
        "--trainer.accelerator=cpu",
        "--trainer.devices=2",
        "--trainer.max_steps=6",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        "--data.train_size=512",
        "--data.val_size=64",
        "--data.batch_size=32",
        "--trainer.callbacks+=tests.ddp_marker.RankFinished",
        "--run_dir",
        str(run),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    for rank in (0, 1):
        world, step = (run / f"rank{rank}.done").read_text().split()
        assert world == "2" and step == "6"
    assert "Run summary" in done.stdout
    assert len(list(run.glob("wandb/offline-run-*"))) == 1, "only rank 0 creates a W&B run"

    module = TaskModule.load_from_checkpoint(run / "checkpoints" / "last.ckpt")
    assert type(module.model).__name__ == "SequenceClassifier"
