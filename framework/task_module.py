"""The one LightningModule of the framework: a model run by a task."""

from __future__ import annotations

import copy
from typing import Any

import lightning.pytorch as pl
import torch
from torch import Tensor, nn

from .tasks import Task

STAGES = ("train", "val", "test")
#: Lightning checkpoints built by the CLI are rebuilt through jsonargparse from their config.
INSTANTIATOR = "lightning.pytorch.cli.instantiate_module"


class TaskModule(pl.LightningModule):
    """Holds a ``model`` (the network, any ``nn.Module``) and a ``task`` (loss, metrics,
    predictions), so that a domain adds models and tasks, never a LightningModule.

    Logs ``<stage>/loss`` and each task metric as ``<stage>/<name>`` (``train/loss``,
    ``val/acc``, ``test/miou`` ...), the same names in every domain. The optimizer and the
    learning-rate schedule come from the CLI (``--optimizer``, ``--lr_scheduler``); without
    ``--optimizer`` it trains with AdamW at learning rate 1e-3 and torch's other defaults.

    Args:
        model: the network.
        task: how a batch becomes a loss, predictions and metrics.
        compile: compile the model with ``torch.compile`` (in place: checkpoints stay
            interchangeable with uncompiled runs).
    """

    def __init__(self, model: nn.Module, task: Task, compile: bool = False) -> None:
        super().__init__()
        self.model, self.task, self.compile_model = model, task, compile
        for stage in STAGES:
            setattr(self, f"{stage}_metrics", task.metrics().clone(prefix=f"{stage}/"))

    def remember_config(self, **config: Any) -> None:
        """Store the model and task configs as hyper-parameters, so that
        ``TaskModule.load_from_checkpoint`` and ``--ckpt_path`` can rebuild the module."""
        self._set_hparams({**config, "_instantiator": INSTANTIATOR})
        self._hparams_initial = copy.deepcopy(self._hparams)

    def setup(self, stage: str) -> None:
        """Let the task check the model against the set-up data module (``Task.check``)."""
        datamodule = self.trainer.datamodule
        if datamodule is not None:
            self.task.check(self.model, datamodule)

    def configure_model(self) -> None:
        if self.compile_model:
            self.model.compile()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The default optimizer; the CLI replaces this method when a config names ``optimizer``."""
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.model(*args, **kwargs)

    def _step(self, batch: Any, stage: str) -> Tensor:
        step = self.task.step(self.model, batch, stage)
        size = len(step.target)
        on_step = stage == "train"
        self.log(f"{stage}/loss", step.loss, on_step=on_step, on_epoch=True, prog_bar=True,
                 sync_dist=not on_step, batch_size=size)
        for name, value in (step.logs or {}).items():
            self.log(f"{stage}/{name}", value, on_step=False, on_epoch=True, sync_dist=True, batch_size=size)
        metrics = getattr(self, f"{stage}_metrics")
        metrics.update(step.preds.detach(), step.target)
        self.log_dict(metrics, on_step=False, on_epoch=True, prog_bar=stage == "val", batch_size=size)
        return step.loss

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: Any, batch_idx: int) -> Tensor:
        return self._step(batch, "val")

    def test_step(self, batch: Any, batch_idx: int) -> Tensor:
        return self._step(batch, "test")

    def predict_step(self, batch: Any, batch_idx: int) -> Any:
        return self.task.predict(self.model, batch)
