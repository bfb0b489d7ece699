"""Nothing lost: a run killed with kill -9 and resumed from last.ckpt ends exactly like an
uninterrupted one, and a resumed run's metrics file and summary cover the whole run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

from framework.__main__ import main

FIT = [sys.executable, "-m", "framework", "fit", "--config", "domains/demo/demo.yaml", "--config", "configs/logger/csv.yaml",
       "--data.train_size=256", "--data.val_size=64", "--data.test_size=64", "--data.batch_size=32",
       "--model.dropout=0.1", "--trainer.max_epochs=3", "--trainer.deterministic=true", "--resume.every_n_steps=3",
       "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def fit(run: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([*FIT, f"--run_dir={run}", *extra], env=env, capture_output=True, text=True, timeout=600)


def test_a_run_killed_mid_epoch_and_resumed_ends_exactly_like_an_uninterrupted_one(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    uninterrupted = fit(whole)
    assert uninterrupted.returncode == 0
    # 8 steps an epoch; last.ckpt is written at steps 3, 6, (8), 9, 12 ...; the process dies at 13, in epoch 1.
    died = fit(killed, "--trainer.callbacks+=tests.process_killer.KillAt", "--trainer.callbacks.step=13")
    assert died.returncode == -9
    last = killed / "checkpoints" / "last.ckpt"
    assert torch.load(last, weights_only=True)["global_step"] == 12, "a checkpoint from the middle of epoch 1"

    resumed = fit(killed, "--ckpt_path", str(last))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    a = torch.load(whole / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(last, weights_only=True)
    assert a["global_step"] == b["global_step"] == 24
    for name, weight in a["state_dict"].items():
        assert torch.equal(weight, b["state_dict"][name]), f"{name} differs after the resume"
    # Every metric of every epoch, the interrupted one's training metrics included, and nothing twice.
    assert (killed / "metrics.csv").read_text() == (whole / "metrics.csv").read_text()
    best = next(line for line in uninterrupted.stdout.splitlines() if "(best: validation" in line)
    assert best.split("(best:")[1] in resumed.stdout


def test_extending_a_run_appends_its_metrics_and_the_summary_covers_all_of_it():
    args = ["fit", "--config", "domains/demo/demo.yaml", "--config", "configs/logger/csv.yaml", "--data.train_size=128",
            "--data.val_size=32", "--data.batch_size=32", "--trainer.enable_progress_bar=false"]
    first = main([*args, "--trainer.max_epochs=2"])
    run = Path(first.trainer.default_root_dir)
    rows = (run / "metrics.csv").read_text().splitlines()
    extended = main([*args, "--trainer.max_epochs=3", "--ckpt_path", str(run / "checkpoints" / "last.ckpt")])
    assert Path(extended.trainer.default_root_dir) == run
    longer = (run / "metrics.csv").read_text().splitlines()
    assert longer[:len(rows)] == rows and len(longer) == len(rows) + 2  # one validation row, one training row
    summary = next(cb for cb in extended.trainer.callbacks if type(cb).__name__ == "RunSummary")
    assert len(summary.history) == 3
