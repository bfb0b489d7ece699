"""Nothing lost: a run killed at any point (kill -9 or SIGTERM) and resumed from last.ckpt ends
exactly like an uninterrupted one: the same weights, the same metrics.csv, and a W&B record
with the same history, though the killed process's own W&B record may hold nothing.

The kill points are drawn from a seeded generator over the kinds of place a run can be:
inside an epoch, inside a validation, between epochs, while a checkpoint is being written;
every one kills a real process (forked from one that imported the libraries once: tests/forked_commands.py).
"""

from __future__ import annotations

import math
import os
import random
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import torch
import yaml

from framework.__main__ import main
from tests.conftest import ROOT
from tests.forked_commands import Forks
from tests.wandb_records import history

#: 8 training steps an epoch, 2 validation batches, 3 epochs; last.ckpt every 3 steps and at each epoch's end.
SIZES = [
    "--data.train_size=256",
    "--data.val_size=64",
    "--data.test_size=64",
    "--data.batch_size=32",
    "--model.dropout=0.1",
    "--trainer.max_epochs=3",
    "--trainer.deterministic=true",
    "--resume.every_n_steps=3",
    "--trainer.log_every_n_steps=2",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]
LOGGERS = {
    "trainer": {
        "logger": [
            {"class_path": "framework.loggers.CSVLogger"},
            {"class_path": "framework.loggers.WandbLogger", "init_args": {"project": "resume"}},
        ]
    }
}


def kill_points(seed: int = 0) -> list[tuple[str, str, int]]:
    """(signal, event, n): one drawn place of each kind, killed with SIGKILL, and two with SIGTERM."""
    draw = random.Random(seed)
    return [
        ("KILL", "train_batch", draw.randint(4, 20)),  # inside an epoch, after a resume point
        ("KILL", "val_batch", draw.randint(3, 6)),  # inside the second or third validation
        ("KILL", "epoch_end", draw.randint(1, 2)),  # between epochs, before that epoch's checkpoint
        ("KILL", "checkpoint", draw.randint(3, 8)),  # while a checkpoint's bytes are written
        ("TERM", "train_batch", draw.randint(4, 20)),  # SIGTERM inside an epoch
        ("TERM", "val_batch", draw.randint(3, 6)),
    ]  # SIGTERM inside a validation


class Ended(NamedTuple):
    """How a fit's process ended: its exit status (negative: the signal that ended it) and its stderr."""

    returncode: int
    stderr: str


@pytest.fixture(scope="module")
def forks() -> Iterator[Forks]:
    """Each fit a process of its own, forked from one that imported the libraries once."""
    server = Forks(ROOT)
    yield server
    server.close()


def fit(forks: Forks, run: Path, config: Path, *extra: str) -> Ended:
    """``fit`` of the demo at :data:`SIZES` with the loggers of ``config`` into ``run``, in a process of
    its own (its output beside ``run``)."""
    argv = ["fit", "--config", "domains/demo/demo.yaml", "--config", str(config), *SIZES, f"--run_dir={run}", *extra]
    output = run.parent / f"{run.name}-output-{len(list(run.parent.glob(f'{run.name}-output-*')))}"
    status = forks.wait(forks.start(argv, output, {**os.environ, "OMP_NUM_THREADS": "1"}), timeout=600)
    return Ended(status, (output / "err").read_text())


def wandb_history(run: Path) -> list[dict]:
    """The metrics of the W&B records ``wandb sync <run>/wandb/offline-run-*`` uploads, by step: W&B's own
    bookkeeping and the pictures (which a resumed run draws anew, not again) left out."""
    rows = []
    for row in (row for record in sorted((run / "wandb").glob("offline-run-*/run-*.wandb")) for row in history(record)):
        if any(key.startswith(("attention/", "images/")) for key in row):
            continue
        rows.append({k: v for k, v in row.items() if not k.startswith("_")})
    return sorted(rows, key=lambda row: (float(row["trainer/global_step"]), sorted(row)))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, forks) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("resume")
    config = folder / "loggers.yaml"
    config.write_text(yaml.safe_dump(LOGGERS))
    done = fit(forks, folder / "whole", config)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "whole", config


@pytest.mark.parametrize("how, event, n", kill_points())
@pytest.mark.slow
def test_a_run_killed_anywhere_and_resumed_ends_exactly_like_an_uninterrupted_one(
    uninterrupted, forks, tmp_path, how, event, n
):
    whole, config = uninterrupted
    killed = tmp_path / "killed"
    action = [
        "--trainer.callbacks+=tests.process_killer.KillAt",
        f"--trainer.callbacks.event={event}",
        f"--trainer.callbacks.n={n}",
        f"--trainer.callbacks.signal={how}",
    ]
    died = fit(forks, killed, config, *action)
    assert died.returncode == (-9 if how == "KILL" else 128 + signal.SIGTERM), died.stderr[-3000:]
    last = killed / "checkpoints" / "last.ckpt"
    if how == "TERM":  # stopped cleanly: told how to resume, and the summary says so
        assert died.stderr.strip().splitlines()[-1].startswith("stopped by SIGTERM; resume it with `fit --config")
        assert '"status": "interrupted"' in (killed / "summary.json").read_text()
    assert last.is_file()

    resumed = fit(forks, killed, config, "--ckpt_path", str(last))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    a = torch.load(whole / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(last, weights_only=True)
    assert a["global_step"] == b["global_step"] == 24 and not list(last.parent.glob(".*.partial"))
    for name, weight in a["state_dict"].items():
        assert torch.equal(weight, b["state_dict"][name]), f"{name} differs after the resume"
    # a stopped process closed its W&B record at the checkpoint, which the resumed one continues; a killed
    # one's record may hold anything, and the resumed record, holding the whole run, sets it aside
    assert len(list((killed / "wandb").glob("superseded-offline-run-*"))) == (how == "KILL")
    # every metric of every epoch, the interrupted one's included, nothing twice: the CSV file and the W&B
    # records that `wandb sync <run>/wandb/offline-run-*` uploads
    assert (killed / "metrics.csv").read_text() == (whole / "metrics.csv").read_text()
    expected, got = wandb_history(whole), wandb_history(killed)
    assert [sorted(row) for row in got] == [sorted(row) for row in expected]
    for want, have in zip(expected, got):
        assert all(math.isclose(float(want[k]), float(have[k]), rel_tol=1e-6) for k in want), (want, have)


def test_resuming_a_finished_run_trains_nothing_and_says_so(tmp_path):
    args = [
        "fit",
        "--config",
        "domains/demo/demo.yaml",
        "--config",
        "configs/logger/csv.yaml",
        "--data.train_size=64",
        "--data.val_size=32",
        "--data.batch_size=32",
        "--trainer.max_epochs=2",
        "--trainer.enable_progress_bar=false",
    ]
    run = Path(main(args).trainer.default_root_dir)
    metrics = (run / "metrics.csv").read_text()
    last = run / "checkpoints" / "last.ckpt"
    assert torch.load(last, weights_only=True)["global_step"] == 4  # current at the end, whatever the metric did
    again = main([*args, "--ckpt_path", str(last)])
    assert again.trainer.global_step == 4 and (run / "metrics.csv").read_text() == metrics


@pytest.mark.slow
def test_last_ckpt_is_current_at_every_epoch_end_also_without_improvement_or_validation(tmp_path):
    args = [
        "fit",
        "--config",
        "domains/demo/demo.yaml",
        "--config",
        "configs/logger/csv.yaml",
        "--data.train_size=64",
        "--data.val_size=32",
        "--data.batch_size=32",
        "--trainer.enable_progress_bar=false",
        "--optimizer.init_args.lr=0",
    ]  # nothing improves after the first validation
    run = Path(main([*args, "--trainer.max_epochs=3"]).trainer.default_root_dir)
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == 6
    assert torch.load(run / "checkpoints" / "best.ckpt", weights_only=True)["global_step"] == 2  # ties keep the first
    sparse = Path(
        main([*args, "--trainer.max_epochs=3", "--trainer.check_val_every_n_epoch=5"]).trainer.default_root_dir
    )
    assert torch.load(sparse / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == 6


@pytest.mark.slow
def test_extending_a_run_appends_its_metrics_and_the_summary_covers_all_of_it():
    args = [
        "fit",
        "--config",
        "domains/demo/demo.yaml",
        "--config",
        "configs/logger/csv.yaml",
        "--data.train_size=128",
        "--data.val_size=32",
        "--data.batch_size=32",
        "--trainer.enable_progress_bar=false",
    ]
    first = main([*args, "--trainer.max_epochs=2"])
    run = Path(first.trainer.default_root_dir)
    rows = (run / "metrics.csv").read_text().splitlines()
    extended = main([*args, "--trainer.max_epochs=3", "--ckpt_path", str(run / "checkpoints" / "last.ckpt")])
    assert Path(extended.trainer.default_root_dir) == run
    longer = (run / "metrics.csv").read_text().splitlines()
    assert longer[: len(rows)] == rows and len(longer) == len(rows) + 2  # one validation row, one training row
    summary = next(cb for cb in extended.trainer.callbacks if type(cb).__name__ == "RunSummary")
    assert len(summary.history) == 3
