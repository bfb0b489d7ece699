"""One table of metric directions (``Task.directions``): whether higher or lower is better, of every
metric a task logs, declared once (torchmetrics' ``higher_is_better``, a task's ``logged``), and
used by the checkpoint, early stopping, compare's best-of-N, the search and W&B's summary."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from torchmetrics import Metric, MetricCollection

from framework.__main__ import main
from framework.commands.compare.results import Record, best_by_training
from framework.tasks import Classification

DEMO = ["--config", "domains/demo/demo.yaml"]


def printed(capsys, *flags: str) -> dict:
    with pytest.raises(SystemExit):
        main(["fit", *DEMO, *flags, "--print_config"])
    return yaml.safe_load(capsys.readouterr().out)


def refused(capsys, monkeypatch, *flags: str) -> str:
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)
    with pytest.raises(SystemExit) as stop:
        main(["fit", *DEMO, *flags, "--print_config"])
    assert stop.value.code == 1
    return capsys.readouterr().err.strip().splitlines()[0]


def test_the_classification_tasks_table():
    directions = Classification(num_classes=3).directions()
    assert directions["val/acc"] == directions["val/f1"] == directions["test/acc"] == "max"
    assert directions["val/loss"] == directions["train/loss"] == "min"
    assert directions["train/attention_loss"] == "min"  # the attention-training options' logs


@pytest.mark.parametrize("monitor, mode", [("val/f1", "max"), ("val/acc", "max"), ("val/loss", "min")])
def test_a_monitored_metric_gets_its_direction(capsys, monitor, mode):
    checkpoint = printed(capsys, f"--checkpoint.monitor={monitor}")["checkpoint"]
    assert (checkpoint["monitor"], checkpoint["mode"]) == (monitor, mode)


def test_a_mode_given_is_kept_where_it_agrees_and_refused_where_it_contradicts(capsys, monkeypatch):
    assert printed(capsys, "--checkpoint.monitor=val/f1", "--checkpoint.mode=max")["checkpoint"]["mode"] == "max"
    assert refused(capsys, monkeypatch, "--checkpoint.monitor=val/f1", "--checkpoint.mode=min") == (
        "error: checkpoint.mode=min, but val/f1 is better when higher: unset checkpoint.mode (or set it to max)"
    )


def test_a_metric_the_task_does_not_log_is_refused_naming_those_it_does(capsys, monkeypatch):
    line = refused(capsys, monkeypatch, "--checkpoint.monitor=val/accuracy")
    assert line.startswith("error: checkpoint.monitor=val/accuracy: SequenceClassification logs no such metric; ")
    assert "val/acc" in line and "val/loss" in line


def test_early_stopping_that_goes_the_wrong_way_is_refused(capsys, monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)
    stopping = '{"class_path": "lightning.pytorch.callbacks.EarlyStopping", "init_args": {"monitor": "val/acc"}}'
    with pytest.raises(SystemExit) as stop:
        main(["fit", *DEMO, f"--trainer.callbacks+={stopping}", "--trainer.max_steps=1"])
    assert stop.value.code == 1
    assert capsys.readouterr().err.startswith(
        "error: EarlyStopping(monitor=val/acc, mode=min): val/acc is better when higher: set its mode to max"
    )


def test_a_metric_that_does_not_say_its_direction_is_named():
    class Undeclared(Metric):
        def update(self) -> None: ...

        def compute(self) -> torch.Tensor:
            return torch.zeros(())

    class Task(Classification):
        def metrics(self) -> MetricCollection:
            return MetricCollection({"score": Undeclared()})

    with pytest.raises(TypeError, match=r"Undeclared \(train/score\) does not say whether higher or lower is better"):
        Task(num_classes=3).directions()


def test_best_of_n_by_training_goes_the_metrics_way():
    def record(seed: int, value: float, direction: str) -> Record:
        fit = {"train_history": [{"epoch": 0, "train/metric": value}], "directions": {"train/metric": direction}}
        return Record(cell=None, seed=seed, run_dir=Path("."), fit=fit, test={})

    runs = [record(0, 0.2, "max"), record(1, 0.9, "max")]
    assert best_by_training(runs, "train/metric").seed == 1
    runs = [record(0, 0.2, "min"), record(1, 0.9, "min")]
    assert best_by_training(runs, "train/metric").seed == 0
