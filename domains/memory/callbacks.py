"""The memory networks' training callback: linear start (Sukhbaatar et al. 2015, §4.2), which
trains without the softmax in the hops, then puts it back."""

from __future__ import annotations

import math
from typing import Any, Optional

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_info

from framework.values import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt


class LinearStart(Callback):
    """Turns the model's ``linear_start`` off once the monitored loss stops falling, or after
    a fixed number of epochs.

    The model (``MemN2N``, ``KVMemNN``) starts with ``linear_start: true``: its hops use the
    raw scores p_i = u . m_i instead of their softmax, so that early training is not stuck
    in a poor local minimum. After each validation epoch this callback compares the
    monitored value with the best so far. The softmax is reinserted for the rest of training

    * after ``patience`` epochs without a fall of more than ``min_delta`` (the paper's rule:
      "when the validation loss stopped decreasing"), or
    * after ``max_epochs`` epochs (the authors' code: 20 epochs single-task, 30 joint),

    whichever comes first, and the learning rate is then multiplied by ``lr_factor`` (the
    paper trains LS at 0.005 and the rest at 0.01: factor 2). The switch is the model's
    buffer ``softmax_removed``, saved in checkpoints; the callback's counters are saved too,
    so a resumed run goes on where it stopped.

    Args:
        monitor: the logged value to watch (the paper: the validation loss).
        patience: epochs without improvement before the switch (0: at the first one;
            None: never, ``max_epochs`` decides).
        min_delta: the fall that counts as improvement.
        max_epochs: end linear start after this many epochs at the latest (None: no limit).
        lr_factor: multiplies every learning rate of the optimizers at the switch.
    """

    def __init__(
        self,
        monitor: str = "val/loss",
        patience: Optional[NonNegativeInt] = 0,
        min_delta: NonNegativeFloat = 0.0,
        max_epochs: Optional[PositiveInt] = None,
        lr_factor: PositiveFloat = 1.0,
    ) -> None:
        if patience is None and max_epochs is None:
            raise ValueError("LinearStart: set patience or max_epochs (or both); with neither it never ends")
        self.monitor, self.patience, self.min_delta = monitor, patience, min_delta
        self.max_epochs, self.lr_factor = max_epochs, lr_factor
        self.best, self.waited, self.epochs, self.ended_at = math.inf, 0, 0, -1

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not hasattr(pl_module.model, "linear_start"):
            raise ValueError(
                f"LinearStart callback: the model {type(pl_module.model).__name__} has no linear_start "
                "switch; use it with a memory network (MemN2N, KVMemNN) or remove the callback"
            )

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        model = pl_module.model
        if trainer.sanity_checking or trainer.state.fn != "fit" or not model.linear_start:
            return
        if self.monitor not in trainer.callback_metrics:
            raise KeyError(f"LinearStart: {self.monitor!r} was not logged; logged: {sorted(trainer.callback_metrics)}")
        value = float(trainer.callback_metrics[self.monitor])
        self.epochs += 1
        if value < self.best - self.min_delta:
            self.best, self.waited = value, 0
        else:
            self.waited += 1
        stalled = self.patience is not None and self.waited > self.patience
        if stalled or (self.max_epochs is not None and self.epochs >= self.max_epochs):
            model.linear_start = False
            self.ended_at = trainer.current_epoch
            for optimizer in trainer.optimizers:
                for group in optimizer.param_groups:
                    group["lr"] *= self.lr_factor
            rank_zero_info(
                f"Linear start ended after epoch {trainer.current_epoch} ({self.monitor} = {value:.4f}): "
                f"softmax reinserted in the memory hops, learning rate x {self.lr_factor}"
            )

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "waited": self.waited, "epochs": self.epochs, "ended_at": self.ended_at}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.best, self.waited = state_dict["best"], state_dict["waited"]
        self.epochs, self.ended_at = state_dict["epochs"], state_dict["ended_at"]
