"""Stop a fit at the first non-finite loss or gradient, before anything non-finite is saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from torch import Tensor

from ..errors import NonFiniteError
from ..loggers import logs_at

ADVICE = (
    "start a new run with a lower learning rate (--optimizer.lr) or clipped gradients (--trainer.gradient_clip_val), "
    "from the last finite weights if you like (--weights_from {last}; its run cannot be resumed with other "
    "values), or look for NaN in the data"
)


class NonFiniteGuard(Callback):
    """Raise :class:`~framework.errors.NonFiniteError` when a training loss or gradient is NaN or
    infinite, naming the step, the batch, the learning rate and what went bad.

    Every step's loss (before backward) and gradient norms (before the optimizer step) are
    tested on the device, without waiting for it; the host reads the verdict every step
    when training on the CPU (where reading costs nothing), so the bad update is never
    applied, and every ``trainer.log_every_n_steps`` steps and before every validation on
    a GPU, so that a GPU never idles for it. Checkpoints are written at validation ends and
    by :class:`ResumePoints` after the check, and the checkpoint writer refuses
    non-finite weights besides, so no checkpoint ever holds them.
    """

    def __init__(self) -> None:
        self._bad: Optional[Tensor] = None  # (step, batch, what) of the first bad step; step -1 while none
        self._batch, self._lr = 0, float("nan")

    def _mark(self, trainer: pl.Trainer, finite: Tensor, what: int) -> None:
        if self._bad is None or self._bad.device != finite.device:
            self._bad = torch.full((3,), -1, dtype=torch.long, device=finite.device)
        first = (self._bad[0] < 0) & ~finite
        now = torch.tensor([trainer.global_step, self._batch, what], device=finite.device)
        self._bad.copy_(torch.where(first, now, self._bad))

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self._batch = batch_idx
        if trainer.optimizers:
            self._lr = trainer.optimizers[0].param_groups[0]["lr"]

    def on_before_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule, loss: Tensor) -> None:
        self._mark(trainer, torch.isfinite(loss.detach()).all(), 0)
        if loss.device.type == "cpu":
            self._check(trainer, pl_module)

    def on_before_optimizer_step(self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: Any) -> None:
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if not grads:
            return
        norms = torch.stack(torch._foreach_norm(grads))
        self._mark(trainer, torch.isfinite(norms).all(), 1)
        if norms.device.type == "cpu":
            self._check(trainer, pl_module)

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any) -> None:
        if logs_at(trainer, trainer.global_step):  # the step just taken (a batch that only accumulated: the one before)
            self._check(trainer, pl_module)

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._check(trainer, pl_module)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._check(trainer, pl_module)

    def _check(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._bad is None:
            return
        step, batch, what = self._bad.tolist()
        if step < 0:
            return
        culprit = "the loss" if what == 0 else f"the gradient of {_first_non_finite(pl_module) or 'a parameter'}"
        raise NonFiniteError(
            f"training stopped: {culprit} is not finite at step {step} (epoch {trainer.current_epoch}, batch "
            f"{batch}), learning rate {self._lr:g}. To fix: "
            + ADVICE.format(last=Path(trainer.default_root_dir) / "checkpoints" / "last.ckpt")
        )


def _first_non_finite(module: pl.LightningModule) -> Optional[str]:
    """The name of the first parameter whose gradient holds a NaN or an infinity, if any still does."""
    for name, parameter in module.named_parameters():
        if parameter.grad is not None and not torch.isfinite(parameter.grad).all():
            return name
    return None
