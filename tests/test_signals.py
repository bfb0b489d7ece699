"""One signal contract for every command (:mod:`framework.signals`).

Generated from the contract's declaration (:data:`framework.signals.STOPS`) and one case per way a
command runs (:data:`CASES`, which covers every command of ``python -m framework``): each case is
started for each signal as a real command in a process of its own (forked from a warm server,
:mod:`tests.forked_commands`, so that the twenty of them take seconds, not minutes), stopped at a
point where it is running, and must end with the signal's declared status, the declared line as
the last line of its stderr (with how to resume it where it can be resumed), no traceback, and
what had finished kept. Besides: a search trial whose worker was killed is retried by the same
command, as a grid's run is.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import optuna
import pytest
import torch
from lightning.pytorch.callbacks import Callback

from framework import signals
from framework.__main__ import COMMANDS
from framework.commands.compare import RESUME
from framework.runs import read_summary
from tests.comparisons import DEMO, compare, folder
from tests.conftest import ROOT
from tests.forked_commands import Forks
from tests.test_preemption import waiting

pytestmark = pytest.mark.slow  # every test here runs the command line end to end

#: The demo, tiny and quiet: a fit of 2 epochs of 2 batches.
TINY = [*DEMO, "--trainer.enable_progress_bar=false"]


def nothing(folder: Path) -> None:
    """What a command that keeps nothing keeps."""


@dataclass(frozen=True)
class Case:
    """A command stopped at a point where it runs."""

    name: str
    #: its word of ``python -m framework``
    command: str
    #: its arguments after the word, from the fitted run it may start from and the case's folder
    args: Callable[[Path, Path], list[str]]
    #: where it waits for the signal (``"module:Class.name"``, which call), in its own process; None:
    #: a callback of its runs writes the marker (``compare``'s runs in their workers)
    pause: Optional[tuple[str, int]]
    #: asserts that what had finished is kept, given the case's folder
    kept: Callable[[Path], None] = nothing
    #: how its last line says to resume it (after "stopped by SIG...; "), given the case's folder; None: it says nothing
    resumes: Callable[[Path], Optional[str]] = lambda folder: None


def from_fitted(fitted: Path, folder: Path) -> list[str]:
    """A stage of the fitted run's best checkpoint, in batches of 8 (4 of them), in ``folder/run``."""
    return [
        "--config",
        str(fitted / "config.yaml"),
        "--ckpt_path",
        str(fitted / "checkpoints" / "best.ckpt"),
        "--data.batch_size=8",
        "--trainer.enable_progress_bar=false",
        f"--run_dir={folder / 'run'}",
    ]


def fit_kept(folder: Path) -> None:
    run = folder / "run"
    assert read_summary(run)["fit"]["status"] == "interrupted"
    last = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert last["global_step"] == 3  # the step it was in when told to stop, finished


def stage_kept(stage: str) -> Callable[[Path], None]:
    def kept(folder: Path) -> None:
        assert read_summary(folder / "run")[stage]["status"] == "interrupted"

    return kept


def predictions_kept(folder: Path) -> None:
    rows = (folder / "run" / "predictions" / "predictions.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 8  # the header and the two batches done


def evaluate_kept(folder: Path) -> None:
    assert read_summary(folder / "run")["test"]["status"] == "finished"  # the plain test, done before the stop
    assert not (folder / "run" / "evaluation.csv").exists()


def comparison(folder: Path, name: str) -> Path:
    return folder / "runs" / "compare" / name


def grid_kept(folder: Path) -> None:
    (run,) = (comparison(folder, "grid") / "runs").glob("*/seed0")
    assert read_summary(run)["fit"]["status"] == "interrupted" and (run / "checkpoints" / "last.ckpt").is_file()


def search_kept(folder: Path) -> None:
    study = optuna.load_study(study_name="search", storage=f"sqlite:///{comparison(folder, 'search') / 'study.db'}")
    assert [t.state.name for t in study.trials] == ["RUNNING"]  # unfinished: the same command resumes it
    assert (comparison(folder, "search") / "runs" / "trial0" / "seed0" / "checkpoints" / "last.ckpt").is_file()


def no_run_started(folder: Path) -> None:
    assert not (comparison(folder, "cells") / "runs").exists()


def compare_args(*args: str) -> Callable[[Path, Path], list[str]]:
    """A comparison of the tiny demo, its runs stopping for the signal at their second step."""
    return lambda fitted, folder: [*TINY, *args, "--jobs", "1", "--status_every", "0", waiting(folder / "marker")]


CASES = [
    Case(
        "fit",
        "fit",
        lambda fitted, folder: [*TINY, "--data.batch_size=16", f"--run_dir={folder / 'run'}"],
        ("framework.task_module:TaskModule.training_step", 3),
        fit_kept,
        lambda folder: (
            f"resume it with `fit --config {folder / 'run' / 'config.yaml'} "
            f"--ckpt_path {folder / 'run' / 'checkpoints' / 'last.ckpt'}`"
        ),
    ),
    Case(
        "validate",
        "validate",
        from_fitted,
        ("framework.task_module:TaskModule.validation_step", 1),
        stage_kept("validate"),
    ),
    Case("test", "test", from_fitted, ("framework.task_module:TaskModule.test_step", 1), stage_kept("test")),
    Case("predict", "predict", from_fitted, ("framework.task_module:TaskModule.predict_step", 2), predictions_kept),
    Case(  # between the plain test (a stage of Lightning's) and the tests of its own
        "evaluate", "evaluate", from_fitted, ("framework.commands.evaluate:run_tests", 1), evaluate_kept
    ),
    Case(
        "parity",
        "parity",
        lambda fitted, folder: [*TINY, "--repeats", "1"],
        ("framework.attention.backend_parity:parity", 1),
    ),
    Case("blocks", "blocks", lambda fitted, folder: [], ("framework.commands.blocks:main", 1)),
    Case(
        "compare-grid",
        "compare",
        compare_args("--grid", "model.attention=[mhsa]", "--name", "grid"),
        None,
        grid_kept,
        lambda folder: RESUME["grid"],
    ),
    Case(
        "compare-search",
        "compare",
        compare_args("--search", "model.attention=[mhsa,none]", "--trials", "1", "--name", "search"),
        None,
        search_kept,
        lambda folder: RESUME["search"],
    ),
    Case(  # while the config parser checks the cells, in compare's own process
        "compare-checking-cells",
        "compare",
        lambda fitted, folder: [*TINY, "--grid", "model.attention=[mhsa,none]", "--name", "cells"],
        ("framework.commands.fit.cli:check_config_files", 1),
        no_run_started,
        lambda folder: RESUME["grid"],
    ),
]


@dataclass
class Outcome:
    folder: Path
    status: int
    out: str
    err: str


def environment(runs: Path) -> dict[str, str]:
    """A command's environment: this one's, without what a test or a shell may have set for other
    runs, with its own runs folder, the one-line messages a user sees, and one thread."""
    drop = ("FRAMEWORK_TRACEBACK", "FRAMEWORK_RUN_DIR", "WANDB_API_KEY")
    env = {key: value for key, value in os.environ.items() if key not in drop}
    env.update(FRAMEWORK_RUNS_DIR=str(runs), FRAMEWORK_CACHE_DIR=str(runs.parent / "cache"), OMP_NUM_THREADS="1")
    return env


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> dict[tuple[str, str], Outcome]:
    """Every case stopped by every signal, all at once; their outcomes by (case, signal name)."""
    root = tmp_path_factory.mktemp("signals")
    forks = Forks(ROOT)
    try:
        fitted = root / "fitted"
        pid = forks.start(["fit", *TINY, f"--run_dir={fitted}"], root / "fitting", environment(root / "runs"))
        assert forks.wait(pid) == 0, (root / "fitting" / "err").read_text()[-3000:]
        outcomes: dict[tuple[str, str], Outcome] = {}

        def stop(case: Case, how: signals.Stop) -> None:
            folder = root / f"{case.name}-{how.signal.name}"
            pid = forks.start(
                [case.command, *case.args(fitted, folder)], folder, environment(folder / "runs"), case.pause
            )
            deadline = time.monotonic() + 180
            while not (folder / "marker").exists() and not forks.ended(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if (folder / "marker").exists():
                os.kill(pid, how.signal)
            status = forks.wait(pid)
            outcomes[case.name, how.signal.name] = Outcome(
                folder, status, (folder / "out").read_text(), (folder / "err").read_text()
            )

        threads = [threading.Thread(target=stop, args=(case, how)) for case in CASES for how in signals.STOPS.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return outcomes
    finally:
        forks.close()


def test_every_command_has_a_case():
    assert {case.command for case in CASES} == set(COMMANDS)


def test_the_contract_says_the_statuses_a_shell_reports():
    assert {number: how.status for number, how in signals.STOPS.items()} == {signal.SIGTERM: 143, signal.SIGINT: 130}


@pytest.mark.parametrize("how", signals.STOPS.values(), ids=lambda how: how.signal.name)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_stopped_command_ends_as_the_contract_says(stopped, case, how):
    outcome = stopped[case.name, how.signal.name]
    folder, said = outcome.folder, outcome.err[-3000:]
    assert outcome.status == how.status, said
    assert "Traceback" not in outcome.err + outcome.out, said
    line = how.line(case.resumes(folder))
    assert outcome.err.splitlines()[-1] == line and outcome.err.count(how.said) == 1, said
    case.kept(folder)


class KillOnce(Callback):
    """The first fit of trial 0 kills its worker (SIGKILL) after its first step, once (``marker``)."""

    def __init__(self, marker: str) -> None:
        self.marker = Path(marker)

    def on_train_batch_end(self, trainer, *args) -> None:
        if "trial0" in trainer.default_root_dir and not self.marker.exists():
            self.marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)


def test_a_search_trial_whose_worker_was_killed_is_retried_by_the_same_command(tmp_path, capsys):
    killing = (
        '--trainer.callbacks+={"class_path": "tests.test_signals.KillOnce", '
        f'"init_args": {{"marker": "{tmp_path / "killed"}"}}}}'
    )
    args = ["--trainer.max_epochs=1", killing, "--search", "model.attention=[mhsa,none]", "--trials", "2"]
    args += ["--jobs", "1", "--name", "retried", "--status_every", "0"]
    storage = f"sqlite:///{folder('retried') / 'study.db'}"

    with pytest.raises(SystemExit) as first:  # trial 1 runs meanwhile; trial 0 is left for the same command
        compare(*args)
    assert first.value.code == 1
    err = capsys.readouterr().err
    assert "trial0/seed0: fit stopped by SIGKILL" in err and "run the same command again to resume them" in err
    states = {t.number: t.state.name for t in optuna.load_study(study_name="retried", storage=storage).trials}
    assert states == {0: "RUNNING", 1: "COMPLETE"}

    summary = compare(*args)
    study = optuna.load_study(study_name="retried", storage=storage)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]  # trial 0 run again, no third one
    assert [cell.name for cell in summary.cells] == ["trial0", "trial1"]
    assert read_summary(folder("retried") / "runs" / "trial0" / "seed0")["fit"]["status"] == "finished"
