"""The private parts of Lightning, torchmetrics and jsonargparse the framework relies on, where
they have no public equivalent, and the public rules that stand in for private ones.

Each test fails, naming the framework file that needs a look, when an upgrade removes or
changes what it pins; none of them is about the framework's own behaviour.
"""

from __future__ import annotations

import inspect

import lightning.pytorch as pl
import pytest
import torch
from jsonargparse import ArgumentParser, _typehints
from lightning.pytorch.callbacks import Callback, ModelCheckpoint, TQDMProgressBar
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.demos.boring_classes import BoringModel
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loops.evaluation_loop import _EvaluationLoop
from lightning.pytorch.utilities.model_summary import model_summary
from torchmetrics import MeanMetric
from torchmetrics.classification import MulticlassAccuracy

from framework.loggers import logs_at, metrics_step
from framework.task_module import _set_state, _state_of

#: (class, private method, its parameters, who relies on it): methods the framework overrides or calls.
PRIVATE_METHODS = [
    (
        ModelCheckpoint,
        "_save_last_checkpoint",
        ["self", "trainer", "monitor_candidates"],
        "framework/callbacks/checkpoints.py (RunCheckpoint overrides it and calls it)",
    ),
    (ModelCheckpoint, "_monitor_candidates", ["self", "trainer"], "framework/callbacks/checkpoints.py"),
    (TQDMProgressBar, "_should_update", ["self", "current", "total"], "framework/callbacks/progress_bar.py"),
    (ExperimentWriter, "_check_log_dir_exists", ["self"], "framework/loggers.py (_AppendingWriter overrides it)"),
    (
        LightningCLI,
        "_add_configure_optimizers_method_to_model",
        ["self", "subcommand"],
        "framework/commands/fit/cli.py",
    ),
    (LightningCLI, "_get", ["self", "config", "key", "default"], "framework/commands/fit/cli.py"),
    (
        _EvaluationLoop,
        "_print_results",
        ["results", "stage"],
        "framework/commands/fit/results_table.py (install replaces it on the validate and test loops)",
    ),
    (
        model_summary,
        "_format_summary_table",
        [
            "total_parameters",
            "trainable_parameters",
            "model_size",
            "total_training_modes",
            "total_flops",
            "cols",
        ],
        "framework/callbacks/model_summary.py",
    ),
]


@pytest.mark.parametrize(
    "owner, name, parameters, user",
    PRIVATE_METHODS,
    ids=[f"{owner.__name__}.{name}" for owner, name, _, _ in PRIVATE_METHODS],
)
def test_private_methods_the_framework_overrides_or_calls(owner, name, parameters, user):
    method = getattr(owner, name, None)
    assert callable(method), f"{owner.__name__}.{name} is gone: {user} needs another way"
    found = list(inspect.signature(method).parameters)
    assert found == parameters, f"{owner.__name__}.{name} now takes {found}, not {parameters}: check {user}"


def test_the_csv_loggers_private_attributes(tmp_path):
    logger = CSVLogger(str(tmp_path))
    assert logger._experiment is None, "CSVLogger._experiment changed: check framework/loggers.py (CSVLogger)"
    writer = ExperimentWriter(str(tmp_path / "run"))
    assert all(hasattr(writer._fs, name) for name in ("isfile", "rm", "makedirs")), (
        "ExperimentWriter._fs changed: check framework/loggers.py (_AppendingWriter, CSVLogger)"
    )


def test_a_lightning_modules_trainer_attribute():
    """``TaskModule`` reads ``_trainer`` to tell whether a trainer is attached (``.trainer`` raises when none is)."""
    module = BoringModel()
    assert module._trainer is None, "LightningModule._trainer changed: check framework/task_module.py"
    with pytest.raises(RuntimeError):
        _ = module.trainer
    trainer = pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False)
    module.trainer = trainer
    assert module._trainer is trainer, "LightningModule._trainer changed: check framework/task_module.py"


def test_a_metrics_count_of_updates_is_restored():
    """torchmetrics has no public setter of the count of updates: ``_set_state`` writes ``_update_count``."""
    torch.manual_seed(0)
    preds, target = torch.randn(12, 3), torch.randint(0, 3, (12,))
    whole, first, resumed = (MulticlassAccuracy(3, average="macro") for _ in range(3))
    whole.update(preds, target)
    first.update(preds[:5], target[:5])
    first.compute()  # a cached result, which the restored metric must not return
    saved = _state_of(first)
    first.reset()
    _set_state(resumed, saved)
    assert resumed.update_count == 1 and resumed.update_called, (
        "Metric._update_count no longer sets update_count: check framework/task_module.py (_set_state)"
    )
    resumed.update(preds[5:], target[5:])
    assert torch.equal(resumed.compute(), whole.compute())
    mean = _set_state(
        MeanMetric(), {"state": {"mean_value": torch.tensor(6.0), "weight": torch.tensor(3.0)}, "updates": 2}
    )
    assert mean.compute() == 2.0 and mean.update_count == 2


class LoggingSteps(Callback):
    """Per training batch: Lightning's own verdict on logging, and :func:`logs_at`'s, both where
    ``TaskModule`` asks (before the optimizer step) and where ``NonFiniteGuard`` asks (after it)."""

    def __init__(self, stop_at: int = -1) -> None:
        self.before, self.after, self.stop_at = [], [], stop_at

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.before.append((trainer._logger_connector.should_update_logs, logs_at(trainer, trainer.global_step + 1)))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.after.append((trainer._logger_connector.should_update_logs, logs_at(trainer, trainer.global_step)))
        if trainer.global_step == self.stop_at:
            trainer.should_stop = True


@pytest.mark.parametrize(
    "settings",
    [
        {"log_every_n_steps": 3},
        {"log_every_n_steps": 1},
        {"log_every_n_steps": 0},
        {"log_every_n_steps": 2, "accumulate_grad_batches": 3},
        {"log_every_n_steps": 4, "stop_at": 5, "min_steps": 9},  # stopping, held back by min_steps: logs every step
    ],
    ids=["every-3", "every-1", "never", "accumulating", "stopping"],
)
def test_logs_at_is_lightnings_own_rule(settings, tmp_path):
    """``TaskModule`` logs ``train/loss_step`` and ``NonFiniteGuard`` reads its verdict at the steps
    Lightning's logger connector (``should_update_logs``, private) would choose."""
    settings = dict(settings)
    steps = LoggingSteps(settings.pop("stop_at", -1))
    trainer = pl.Trainer(
        max_epochs=2,
        limit_train_batches=7,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[steps],
        default_root_dir=str(tmp_path),
        **settings,
    )
    trainer.fit(BoringModel())
    assert steps.before and all(lightning == ours for lightning, ours in steps.before), (
        f"Lightning's logging steps changed: check framework/loggers.py (logs_at): {steps.before}"
    )
    if (
        "accumulate_grad_batches" not in settings
    ):  # the guard reads after the step: the same steps when each batch steps
        assert all(lightning == ours for lightning, ours in steps.after), steps.after
    assert any(ours for _, ours in steps.before) == (settings["log_every_n_steps"] > 0)


def test_jsonargparse_private_parts():
    parser, fit = ArgumentParser(), ArgumentParser()
    parser.add_subcommands().add_subcommand("fit", fit)
    assert parser._subcommands_action._name_parser_map["fit"] is fit, (
        "jsonargparse's subcommand parsers moved: check framework/commands/fit/cli.py (_subcommands_action)"
    )
    assert callable(_typehints.discard_init_args_on_class_path_change), (
        "jsonargparse's discard_init_args_on_class_path_change is gone: check framework/commands/fit/config_sections.py"
    )
    assert callable(_typehints.subclass_spec_as_namespace), (
        "jsonargparse's subclass_spec_as_namespace is gone: check framework/commands/fit/config_sections.py"
    )


class _ValidationSteps(Callback):
    """Where a validation's metrics went (the logger's step) and what :func:`metrics_step` said then."""

    def __init__(self) -> None:
        self.said: list[int] = []

    def on_validation_epoch_end(self, trainer, module) -> None:
        self.said.append(metrics_step(trainer))


class _StepLogger(CSVLogger):
    def __init__(self, folder) -> None:
        super().__init__(folder)
        self.validation_steps: list[int] = []

    def log_metrics(self, metrics, step=None) -> None:
        if "valid_loss" in metrics:
            self.validation_steps.append(step)
        super().log_metrics(metrics, step)


class _LoggingModel(BoringModel):
    def validation_step(self, batch, batch_idx):
        loss = super().validation_step(batch, batch_idx)["x"]
        self.log("valid_loss", loss)
        return loss


def test_metrics_step_is_where_lightning_logs_a_validations_metrics(tmp_path):
    """``metrics_step`` reads the logger connector's private count: the step of a validation's metrics
    (framework/callbacks/attention_maps.py logs its pictures there)."""
    seen, logger = _ValidationSteps(), _StepLogger(str(tmp_path))
    trainer = pl.Trainer(
        max_epochs=2,
        limit_train_batches=3,
        limit_val_batches=2,
        num_sanity_val_steps=0,
        logger=logger,
        callbacks=[seen],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(_LoggingModel())
    assert logger.validation_steps == seen.said == [2, 5], (
        "Lightning logs a validation's metrics elsewhere now: check framework/loggers.py (metrics_step)"
    )
