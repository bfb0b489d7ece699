"""The warm workers of ``compare`` (framework/commands/compare/pool.py, worker.py): runs one after another
in one process, a crashing or killed run failing alone with its reason, and no state carried from
one run to the next: a run done after others in a worker ends exactly as in a fresh process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lightning.pytorch.callbacks import Callback

from framework.commands.compare.pool import Pool
from framework.commands.compare.runner import RunPlan, fit_arguments, state
from framework.runs import read_summary
from tests.comparisons import DEMO

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end

#: A callback that kills its process with SIGKILL after the second training step (a worker's crash).
KILLED = '--trainer.callbacks+={"class_path": "tests.process_killer.KillAt", "init_args": {"step": 2}}'
#: A callback that raises in the middle of training (no check of the framework's: a traceback in the log).
RAISES = "--trainer.callbacks+=tests.test_compare_pool.Bug"


class Bug(Callback):
    def on_train_batch_end(self, *args) -> None:
        raise RuntimeError("a bug in the run's own code")


DETERMINISTIC = [*DEMO, "--trainer.deterministic=true"]


def plan(tmp_path: Path, name: str, seed: int, *flags: str) -> RunPlan:
    return RunPlan(
        cell=name,
        label=name,
        seed=seed,
        run_dir=str(tmp_path / name / f"seed{seed}"),
        fit_args=fit_arguments([], DETERMINISTIC, list(flags)),
        test_args=[],
        group="pool",
    )


def outcome(run: Path) -> dict:
    """What a run ended with: its validation curve, training curve and test metrics."""
    fit = read_summary(run)["fit"]
    return {
        "history": fit["history"],
        "train": fit["train_history"],
        "best": fit["best_score"],
        "test": read_summary(run / "test")["test"]["metrics"],
        "config": fit["provenance"]["config_hash"],
    }


def test_a_crashing_or_killed_run_fails_alone_and_a_warm_worker_carries_nothing_over(tmp_path, monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")  # the runs print their one-line errors, as for a user
    plans = [
        plan(tmp_path, "first", 1),
        plan(tmp_path, "bad", 0, "--data.batch_size=0"),  # the framework's error: line
        plan(tmp_path, "raises", 0, RAISES),  # an exception: a traceback
        plan(tmp_path, "killed", 0, KILLED),  # the worker dies (kill -9)
        plan(tmp_path, "after", 0, "--model.attention=local"),  # a new worker takes over
        plan(tmp_path, "warm", 0),
    ]  # after another run in that worker
    with Pool([None], threads=1) as pool:
        first = pool.workers[0].process.pid
        results = [pool.submit(p).result() for p in plans]
        restarted = pool.workers[0].process.pid
    good, bad, raises, killed, after, warm = results
    assert good.ok and after.ok and warm.ok and good.did == "fit+test"
    assert bad.error == "fit: data.batch_size: expected an int >= 1, got '0'" and not bad.retry
    assert bad.log == str(tmp_path / "bad" / "seed0" / "fit.log")
    assert raises.error == "fit: RuntimeError: a bug in the run's own code" and not raises.retry
    assert killed.error == "fit stopped by SIGKILL" and killed.retry and killed.did == "fit"
    assert restarted != first  # the killed worker was replaced; the runs before it shared one process
    assert state(tmp_path / "killed" / "seed0") == "fit" and state(tmp_path / "warm" / "seed0") == "done"
    log = (tmp_path / "bad" / "seed0" / "fit.log").read_text()
    assert (
        log.startswith("$ python -m framework fit --config domains/demo/demo.yaml") and "error: data.batch_size" in log
    )

    # The same run in a fresh worker: exactly the same curves and test metrics.
    with Pool([None], threads=1) as pool:
        fresh = pool.submit(plan(tmp_path / "fresh", "warm", 0)).result()
    assert fresh.ok
    assert outcome(tmp_path / "warm" / "seed0") == outcome(tmp_path / "fresh" / "warm" / "seed0")
    summary = json.loads((tmp_path / "warm" / "seed0" / "summary.json").read_text())["fit"]
    assert summary["provenance"]["deterministic"] is True and summary["provenance"]["device"].endswith("1 threads)")
