"""``compare --search``: Optuna's TPE over config keys, its study in the comparison folder (a
search killed midway goes on from there), the trials' tables and best.yaml."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml
from lightning.pytorch.callbacks import Callback

from framework.commands.compare import search
from framework.commands.compare.resolve import resolve
from framework.errors import ConfigError
from tests.comparisons import DEMO, compare, folder


def test_spaces_are_optunas_distributions_and_bad_ones_name_the_flag():
    lr = search.parse_space("optimizer.init_args.lr=loguniform(1e-4,1e-2)")
    assert lr.distribution == optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    assert search.parse_space("model.dim=int(16,64,16)").distribution == optuna.distributions.IntDistribution(
        16, 64, step=16
    )
    assert search.parse_space("model.attention=[mhsa,none]").distribution.choices == ("mhsa", "none")
    for flag, message in [
        ("model.dim=int(1.5,4)", "expected int"),
        ("model.dim=normal(0,1)", "is no space"),
        ("seed_everything=[1,2]", "not a key a search can vary"),
        ("model.dim", "expected KEY=SPACE"),
        ("model.dim=loguniform(0,1)", "A > 0"),
    ]:
        with pytest.raises(ConfigError, match=message):
            search.parse_space(flag)
    with pytest.raises(ConfigError, match="--search: a search chooses its own cells"):
        compare("--search", "model.dim=int(8,16)", "--grid", "model.attention=[mhsa,none]")
    with pytest.raises(ConfigError, match="--executor submitit takes a --grid or --cells comparison, not a --search"):
        compare("--search", "model.dim=int(8,16)", "--executor", "submitit")


class KillTheSearch(Callback):
    """In the first fit of trial 1: SIGKILL to the compare process (a node lost, kill -9), then the
    worker ends the fit as the comparison's end tells it to (SIGTERM: last.ckpt). Writes its pid."""

    def __init__(self, marker: str) -> None:
        self.marker = Path(marker)

    def on_train_batch_end(self, trainer, *args) -> None:
        if "trial1" not in trainer.default_root_dir or trainer.global_step != 2 or self.marker.exists():
            return
        self.marker.write_text(str(os.getpid()))
        os.kill(os.getppid(), signal.SIGKILL)
        deadline = time.monotonic() + 60
        while not trainer.received_sigterm and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.mark.slow
def test_a_search_killed_in_its_second_trial_resumes_from_its_study_and_writes_best_yaml(tmp_path, capsys):
    marker = tmp_path / "killed"
    callback = (
        f'--trainer.callbacks+={{"class_path": "tests.test_compare_search.KillTheSearch", '
        f'"init_args": {{"marker": "{marker}"}}}}'
    )
    args = [
        *DEMO,
        "--trainer.max_epochs=1",
        callback,
        "--search",
        "optimizer.init_args.lr=loguniform(1e-3,1e-2)",
        "--search",
        "model.attention=[mhsa,none]",
        "--trials",
        "3",
        "--jobs",
        "1",
        "--name",
        "search",
        "--status_every",
        "0",
    ]
    killed = subprocess.run(
        [sys.executable, "-m", "framework", "compare", *args], capture_output=True, text=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    worker = int(marker.read_text())
    deadline = time.monotonic() + 60
    while Path(f"/proc/{worker}").exists() and "Z" not in Path(f"/proc/{worker}/stat").read_text().split()[2]:
        assert time.monotonic() < deadline, "the orphaned worker did not end"
        time.sleep(0.1)
    runs = folder("search") / "runs"
    assert (runs / "trial1" / "seed0" / "checkpoints" / "last.ckpt").is_file()
    storage = f"sqlite:///{folder('search') / 'study.db'}"
    states = [t.state.name for t in optuna.load_study(study_name="search", storage=storage).trials]
    assert states == ["COMPLETE", "RUNNING"]

    summary = compare(*args[len(DEMO) :])  # the same command: trial 1 resumes, trial 2 runs
    study = optuna.load_study(study_name="search", storage=storage)
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    fit_log = (runs / "trial1" / "seed0" / "fit.log").read_text()
    commands = [line for line in fit_log.splitlines() if line.startswith("$ python -m framework fit")]
    assert len(commands) == 2 and "--ckpt_path" not in commands[0] and "last.ckpt" in commands[1]
    assert [cell.name for cell in summary.cells] == ["trial0", "trial1", "trial2"]
    for cell, trial in zip(summary.cells, study.trials):  # the tables say what each trial tried
        assert cell.label == (
            f"trial {trial.number} (lr={trial.params['optimizer.init_args.lr']:.3g}, "
            f"attention={trial.params['model.attention']})"
        )
    assert summary.baseline.name == f"trial{study.best_trial.number}"
    out = capsys.readouterr().out
    assert "all 3 trial(s) are random draws: TPE proposes once 10 have finished" in out
    assert "[random draw] seed 0: fit+test" in out  # trial 2's line; trial 1 resumed (drawn before)
    assert f"best: trial {study.best_trial.number}" in out and (folder("search") / "results.md").is_file()

    best = folder("search") / search.BEST_FILE
    text, message = resolve(["--config", str(best)])
    assert text is not None, message
    config = yaml.safe_load(text)
    assert config["optimizer"]["init_args"]["lr"] == study.best_trial.params["optimizer.init_args.lr"]
    assert config["model"]["init_args"]["attention"] == study.best_trial.params["model.attention"]
    assert config["run_dir"] is None and config["trainer"]["max_epochs"] == 8  # demo.yaml's, not the search's 1
    assert "# The search trained with trainer.max_epochs=1; this file has the config's trainer.max_epochs=8" in (
        best.read_text()
    )
