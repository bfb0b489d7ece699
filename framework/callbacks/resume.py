"""Checkpoints inside long epochs, and what a resumed run needs to continue exactly."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.fabric.utilities.seed import _collect_rng_states, _set_rng_states
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_info


def rng_states() -> dict[str, Any]:
    """The global random states (torch, CUDA, numpy, Python) as tensors and numbers, so that a
    checkpoint holding them still loads with ``weights_only=True``."""
    states = _collect_rng_states(include_cuda=torch.cuda.is_available())
    kind, keys, position, has_gauss, gauss = states["numpy"]
    version, python, python_gauss = states["python"]
    return {"torch": states["torch"], "torch.cuda": list(states.get("torch.cuda", [])),
            "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, gauss],
            "python": [version, torch.tensor(python, dtype=torch.int64), python_gauss]}


def set_rng_states(states: dict[str, Any]) -> None:
    """Restore what :func:`rng_states` collected."""
    kind, keys, position, has_gauss, gauss = states["numpy"]
    version, python, python_gauss = states["python"]
    restored = {"torch": states["torch"], "numpy": (kind, keys.numpy().astype(np.uint32), position, has_gauss, gauss),
                "python": (version, tuple(python.tolist()), python_gauss)}
    if states["torch.cuda"] and torch.cuda.is_available():
        restored["torch.cuda"] = states["torch.cuda"]
    _set_rng_states(restored)


class ResumePoints(Callback):
    """``last.ckpt`` during long epochs, with the random states that make a resumed run exact.

    Lightning writes ``last.ckpt`` at the end of every epoch; a run killed in the middle of a
    long one loses that epoch. This callback also writes it every ``every_n_steps`` training
    steps and every ``every_n_minutes`` minutes of training (on by default: only epochs longer
    than that get extra checkpoints). Every checkpoint holds the global random states, restored
    at the first training batch of a resumed run; with the data loaders' positions (torchdata's
    ``StatefulDataLoader``) and ``trainer.deterministic``, a run killed and resumed from
    ``last.ckpt`` ends with exactly the weights and metrics of an uninterrupted one.

    Args:
        every_n_steps: write ``last.ckpt`` every n training steps (``None``: not by steps).
        every_n_minutes: write it when this many minutes of training passed since the last
            checkpoint (0: not by time).
    """

    def __init__(self, every_n_steps: Optional[int] = None, every_n_minutes: float = 10.0) -> None:
        if every_n_steps is not None and every_n_steps < 1:
            raise ValueError(f"resume.every_n_steps must be at least 1 (or null), got {every_n_steps}")
        if every_n_minutes < 0:
            raise ValueError(f"resume.every_n_minutes must be >= 0 (0 = off), got {every_n_minutes}")
        self.every_n_steps, self.every_n_minutes = every_n_steps, every_n_minutes
        self._saved_at = time.monotonic()
        self._mid_epoch = False
        self._restore: Optional[dict[str, Any]] = None
        self._restore_mid_epoch = False

    def state_dict(self) -> dict[str, Any]:
        return {"rng": rng_states(), "mid_epoch": self._mid_epoch}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restore = state_dict.get("rng")
        self._restore_mid_epoch = bool(state_dict.get("mid_epoch"))

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._restore is not None and _finished(trainer):  # resumed, and the loop had nothing left to run
            rank_zero_info(f"Nothing was trained: the checkpoint ends this run ({trainer.fit_loop.epoch_progress.current.processed}"
                           f" epochs, {trainer.global_step} steps; --trainer.max_epochs={trainer.max_epochs}, "
                           f"--trainer.max_steps={trainer.max_steps}). Raise them to train it further.")

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._restore is not None:  # resumed: what was logged after the checkpoint will be logged again
            for logger in trainer.loggers:
                if callable(keep_until := getattr(logger, "keep_until", None)):
                    keep_until(trainer.global_step)

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # After an epoch-end checkpoint the next draws are the new epoch's shuffling: restore now.
        if self._restore is not None and not self._restore_mid_epoch:
            set_rng_states(self._restore)
            self._restore = None

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int) -> None:
        # After a mid-epoch checkpoint, restore once the loader has resumed its position (which
        # the uninterrupted run had reached long before): the next draws are the next step's.
        if self._restore is not None:
            set_rng_states(self._restore)
            self._restore = None

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any) -> None:
        checkpoint = trainer.checkpoint_callback
        if checkpoint is None or checkpoint.dirpath is None or trainer.fit_loop.epoch_loop.batch_progress.is_last_batch:
            return  # the end of the epoch writes last.ckpt anyway
        by_steps = self.every_n_steps is not None and trainer.global_step % self.every_n_steps == 0
        by_time = self.every_n_minutes > 0 and time.monotonic() - self._saved_at >= 60 * self.every_n_minutes
        if by_steps or by_time:
            self._mid_epoch = True
            trainer.save_checkpoint(Path(checkpoint.dirpath) / "last.ckpt")
            self._mid_epoch = False
            self._saved_at = time.monotonic()


def _finished(trainer: pl.Trainer) -> bool:
    """Whether the fit loop, as restored, has nothing left to train (its epoch or step limit reached)."""
    loop = trainer.fit_loop
    by_steps = loop.max_steps not in (None, -1) and trainer.global_step >= loop.max_steps
    by_epochs = loop.max_epochs not in (None, -1) and loop.epoch_progress.current.processed >= loop.max_epochs
    return by_steps or by_epochs
