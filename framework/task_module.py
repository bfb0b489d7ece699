"""The one LightningModule of the framework: a model run by a task."""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack
from typing import Any, Literal, Optional, Union

import lightning.pytorch as pl
import torch
from torch import Tensor, nn
from torchmetrics import MeanMetric, Metric

from .checkpoint import DATA_CONFIG_KEY
from .errors import CheckpointError
from .loggers import logs_at
from .optim import DecayOn, parameter_groups
from .tasks import Task

STAGES = ("train", "val", "test")
#: The stages whose batches the task also decodes, for its generation metrics (``Task.decode``).
GENERATING = ("val", "test")
#: ``torch.compile``'s modes.
CompileMode = Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
#: Lightning checkpoints built by the CLI are rebuilt through jsonargparse from their config.
INSTANTIATOR = "lightning.pytorch.cli.instantiate_module"


class TaskModule(pl.LightningModule):
    """Holds a ``model`` (the network, any ``nn.Module``) and a ``task`` (loss, metrics,
    predictions), so that a domain adds models and tasks, never a LightningModule.

    Logs ``<stage>/loss`` and each task metric as ``<stage>/<name>`` (``train/loss``,
    ``val/acc``, ``test/miou`` ...), the same names in every domain, once per epoch: a step
    only updates the metrics and the running means (no logging call and no host-device
    synchronisation per step), and the epoch's end computes and logs them. The training
    loss of single steps goes to the loggers as ``train/loss_step`` every
    ``trainer.log_every_n_steps`` steps, and :attr:`last_loss` keeps it for the progress bar.
    In validation and test, a task that generates (``Task.decode``: translations, transcripts)
    has each batch decoded once, after its step, for its generation metrics (BLEU, WER ...),
    logged the same way. The optimizer and the
    learning-rate schedule come from the CLI (``--optimizer``, ``--lr_scheduler``); without
    ``--optimizer`` it trains with AdamW at learning rate 1e-3 and torch's other defaults
    (weight decay 0.01), decaying only what ``weight_decay_on`` says (:mod:`framework.optim`).

    Args:
        model: the network.
        task: how a batch becomes a loss, predictions and metrics.
        compile: compile the model with ``torch.compile`` (in place: checkpoints stay
            interchangeable with uncompiled runs): ``True`` in torch's default mode, or a mode
            name. ``"reduce-overhead"`` replays each step's kernels as CUDA graphs, which is
            what a small, launch-bound model needs on a GPU (shapes must repeat: fixed image
            sizes, padded sequence lengths); the library's blocks compile without graph breaks.
        weight_decay_on: ``matrices`` (weight matrices and kernels only) or ``all`` parameters.
    """

    def __init__(
        self,
        model: nn.Module,
        task: Task,
        compile: Union[bool, CompileMode] = False,
        weight_decay_on: DecayOn = "matrices",
    ) -> None:
        super().__init__()
        self.model, self.task, self.compile_model = model, task, compile
        self.weight_decay_on = weight_decay_on
        for stage in STAGES:
            metrics = task.training_metrics() if stage == "train" else task.metrics()
            setattr(self, f"{stage}_metrics", metrics.clone(prefix=f"{stage}/"))
        for stage in GENERATING:
            setattr(self, f"{stage}_generation_metrics", task.generation_metrics().clone(prefix=f"{stage}/"))
        #: per stage, the running (batch-size weighted) mean of the loss and of every tensor in ``Step.logs``;
        #: made on first use, never saved.
        self._means: dict[str, dict[str, MeanMetric]] = {stage: {} for stage in STAGES}
        #: the training loss of the last logging step, as a number (for the progress bar).
        self.last_loss: Optional[float] = None
        #: per stage, what the stage's next ``task.step`` runs inside (:meth:`watch_next_step`); never saved.
        self._watchers: dict[str, list[AbstractContextManager]] = {stage: [] for stage in STAGES}
        #: the config of the data the module is trained on, kept in its checkpoints (set by the CLI),
        #: so that a checkpoint of another experiment is recognised as such.
        self.data_config: Optional[dict[str, Any]] = None

    def remember_config(self, **config: Any) -> None:
        """Store the model and task configs as hyper-parameters, so that
        ``TaskModule.load_from_checkpoint`` and ``--ckpt_path`` can rebuild the module."""
        self.save_hyperparameters({**config, "_instantiator": INSTANTIATOR}, logger=False)

    def setup(self, stage: str) -> None:
        """Let the task check the model against the set-up data module (``Task.check``)."""
        datamodule = self.trainer.datamodule
        if datamodule is not None:
            self.task.check(self.model, datamodule)

    def configure_model(self) -> None:
        if self.compile_model:
            self.model.compile(mode=None if self.compile_model is True else self.compile_model)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The default optimizer; the CLI replaces this method when a config names ``optimizer``."""
        return torch.optim.AdamW(parameter_groups(self, self.weight_decay_on), lr=1e-3)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.model(*args, **kwargs)

    def watch_next_step(self, stage: str, context: AbstractContextManager) -> None:
        """Run the next ``task.step`` of ``stage`` (its loss, predictions and metrics; not the
        decoding of a generating task) inside ``context``, such as an attention
        :class:`~framework.attention.capture`: callbacks read the attention of the step itself
        instead of running the batch through the model once more."""
        self._watchers[stage].append(context)

    def _step(self, batch: Any, stage: str) -> Tensor:
        with ExitStack() as watching:
            for context in self._watchers[stage]:
                watching.enter_context(context)
            self._watchers[stage].clear()
            step = self.task.step(self.model, batch, stage)
        size = len(step.target)
        self._accumulate(stage, "loss", step.loss, size)
        for name, value in (step.logs or {}).items():
            self._accumulate(stage, name, value, size)
        getattr(self, f"{stage}_metrics").update(step.preds.detach(), step.target, **(step.metric_inputs or {}))
        if stage in GENERATING and (generated := self.task.decode(self.model, batch)) is not None:
            getattr(self, f"{stage}_generation_metrics").update(*generated)
        if stage == "train" and self._trainer is not None and logs_at(self.trainer, self.trainer.global_step + 1):
            self._log_step_loss(float(step.loss.detach()))
        return step.loss

    def _log_step_loss(self, loss: float) -> None:
        """``train/loss_step`` to the loggers now, during the step, as Lightning would log it at its end
        (with the epoch, at the step of the batches that stepped before this one): a checkpoint taken
        when the step ends then holds it in its record of what was logged."""
        self.last_loss = loss
        for logger in self.trainer.loggers:
            logger.log_metrics({"train/loss_step": loss, "epoch": self.current_epoch}, step=self.trainer.global_step)

    def _accumulate(self, stage: str, name: str, value: Tensor, size: int) -> None:
        if not size:  # a step without a real position weighs nothing; an epoch of them alone has no mean (not 0/0)
            return
        means = self._means[stage]
        if name not in means:
            means[name] = MeanMetric().to(self.device)
        means[name].update(value.detach(), size)

    def _log_epoch(self, stage: str) -> None:
        """Compute, log and reset the stage's metrics and means (synchronised across processes)."""
        values = {
            f"{stage}/{name}": metric.compute() for name, metric in self._means[stage].items() if metric.update_called
        }
        collections = [getattr(self, f"{stage}_metrics")]
        if stage in GENERATING:
            collections.append(getattr(self, f"{stage}_generation_metrics"))
        for metrics in collections:
            if any(metric.update_called for metric in metrics.values()):
                values.update(metrics.compute())
        for metric in (*self._means[stage].values(), *collections):
            metric.reset()
        if not values:
            return
        if stage != "train":
            self.log_dict(values, prog_bar=stage == "val", sync_dist=True)
            return
        # The training metrics go to the loggers now, as Lightning would log them after the epoch's
        # end (at the step before the last, with the epoch): the epoch's checkpoint, written after
        # this hook, then holds them in its record of what was logged.
        self.log_dict(values, logger=False, sync_dist=True)
        numbers = {name: float(value) for name, value in values.items()}
        for logger in self.trainer.loggers:
            logger.log_metrics({**numbers, "epoch": self.current_epoch}, step=max(self.trainer.global_step - 1, 0))

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Keep the training epoch's running metrics, so that an epoch resumed from a checkpoint
        taken in its middle reports what an uninterrupted one would."""
        metrics = dict(self.train_metrics.items(keep_base=True))
        checkpoint["running_epoch"] = {
            "metrics": {name: _state_of(metric) for name, metric in metrics.items()},
            "means": {name: _state_of(metric) for name, metric in self._means["train"].items()},
        }
        if self.data_config is not None:
            checkpoint[DATA_CONFIG_KEY] = self.data_config

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Check that the checkpoint's weights fit this module (one line naming the first tensor that
        does not, instead of torch's report of every mismatch), and restore the running epoch."""
        path = getattr(self._trainer, "ckpt_path", None)
        if problem := weights_misfit(self.state_dict(), checkpoint.get("state_dict", {}), self.strict_loading):
            raise CheckpointError(
                f"the checkpoint{f' {path}' if path else ''} does not fit the model its config builds: "
                f"{problem}; the code changed since it was written, or the file was altered"
            )
        running = checkpoint.get("running_epoch", {})
        metrics = dict(self.train_metrics.items(keep_base=True))
        for name, state in running.get("metrics", {}).items():
            if name in metrics:
                _set_state(metrics[name], state)
        for name, state in running.get("means", {}).items():
            self._means["train"][name] = _set_state(MeanMetric().to(self.device), state)

    def on_train_epoch_end(self) -> None:
        self._log_epoch("train")

    def on_validation_epoch_end(self) -> None:
        self._log_epoch("val")

    def on_test_epoch_end(self) -> None:
        self._log_epoch("test")

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: Any, batch_idx: int) -> Tensor:
        return self._step(batch, "val")

    def test_step(self, batch: Any, batch_idx: int) -> Tensor:
        return self._step(batch, "test")

    def predict_step(self, batch: Any, batch_idx: int) -> Any:
        return self.task.predict(self.model, batch)


def _state_of(metric: Metric) -> dict[str, Any]:
    """A metric's accumulated state and its count of updates (what ``compute`` needs)."""
    return {"state": dict(metric.metric_state), "updates": metric.update_count}


def _set_state(metric: Metric, saved: dict[str, Any]) -> Metric:
    """Restore :func:`_state_of`'s ``saved`` into ``metric``. torchmetrics has no public way to
    set the count of updates: ``_update_count`` is written, pinned by tests/test_lightning_pins.py."""
    metric.reset()  # drops a cached result of compute
    for name, value in saved["state"].items():
        setattr(
            metric, name, value.to(metric.device) if isinstance(value, Tensor) else [v.to(metric.device) for v in value]
        )
    metric._update_count = saved["updates"]
    return metric


def weights_misfit(own: dict[str, Tensor], theirs: dict[str, Any], strict: bool = True) -> Optional[str]:
    """What keeps a checkpoint's ``state_dict`` from loading into a module's: the first tensor of
    another shape, else (``strict``) the weights one has and the other lacks; None when they fit."""
    for name, value in theirs.items():
        if name in own and isinstance(value, Tensor) and value.shape != own[name].shape:
            return f"{name} has shape {tuple(value.shape)} in the file and {tuple(own[name].shape)} in the model"
    missing, unexpected = [n for n in own if n not in theirs], [n for n in theirs if n not in own]
    if strict and (missing or unexpected):
        said = [
            f"the file lacks {', '.join(missing[:3])}" if missing else "",
            f"the model has no {', '.join(unexpected[:3])}" if unexpected else "",
        ]
        return "; ".join(part for part in said if part)
    return None
