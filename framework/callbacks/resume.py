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
from lightning.pytorch.trainer.states import RunningStage, TrainerFn
from lightning.pytorch.utilities import rank_zero_info
from lightning.pytorch.utilities.exceptions import SIGTERMException

from ..runs import read_summary
from ..values import NonNegativeFloat, PositiveInt


def rng_states() -> dict[str, Any]:
    """The global random states (torch, CUDA, numpy, Python) as tensors and numbers, so that a
    checkpoint holding them still loads with ``weights_only=True``."""
    states = _collect_rng_states(include_cuda=torch.cuda.is_available())
    kind, keys, position, has_gauss, gauss = states["numpy"]
    version, python, python_gauss = states["python"]
    return {
        "torch": states["torch"],
        "torch.cuda": list(states.get("torch.cuda", [])),
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, gauss],
        "python": [version, torch.tensor(python, dtype=torch.int64), python_gauss],
    }


def set_rng_states(states: dict[str, Any]) -> None:
    """Restore what :func:`rng_states` collected."""
    kind, keys, position, has_gauss, gauss = states["numpy"]
    version, python, python_gauss = states["python"]
    restored = {
        "torch": states["torch"],
        "numpy": (kind, keys.numpy().astype(np.uint32), position, has_gauss, gauss),
        "python": (version, tuple(python.tolist()), python_gauss),
    }
    if states["torch.cuda"] and torch.cuda.is_available():
        restored["torch.cuda"] = states["torch.cuda"]
    _set_rng_states(restored)


class ResumePoints(Callback):
    """``last.ckpt`` during long epochs and when a run is stopped, with what makes a resumed run exact.

    ``last.ckpt`` is written at the end of every epoch (:class:`RunCheckpoint`); a run killed in
    the middle of a long one would lose that epoch. This callback also writes it every
    ``every_n_steps`` training steps and every ``every_n_minutes`` minutes of training (on by
    default: only epochs longer than that get extra checkpoints), and when the run is stopped
    from outside during training (SIGTERM, as SLURM and Kubernetes send, or Ctrl-C: at the end of the
    step it is in), so that the stopped run resumes where it stopped.

    Every checkpoint holds the global random states, restored where the uninterrupted run would
    draw next (at the next epoch's start after an epoch-end checkpoint, at the next batch after
    one inside an epoch), and the metrics the loggers were given so far: a resumed run's loggers
    drop what was logged after the checkpoint (CSV) or are given again what was logged before it
    (W&B, whose offline record of a killed process may hold nothing). With the loaders' positions
    (torchdata's ``StatefulDataLoader``) and ``trainer.deterministic``, a run killed at any point
    and resumed from ``last.ckpt`` ends with exactly the weights and metrics of an uninterrupted one.

    Args:
        every_n_steps: write ``last.ckpt`` every n training steps (``None``: not by steps).
        every_n_minutes: write it when this many minutes of training passed since the last
            checkpoint (0: not by time).
    """

    def __init__(self, every_n_steps: Optional[PositiveInt] = None, every_n_minutes: NonNegativeFloat = 10.0) -> None:
        self.every_n_steps, self.every_n_minutes = every_n_steps, every_n_minutes
        self._saved_at = time.monotonic()
        self._trainer: Optional[pl.Trainer] = None
        self._restore: Optional[dict[str, Any]] = None
        self._restore_mid_epoch = False
        self._logged: Optional[list] = None  # what the loggers were given, as a resumed checkpoint says
        self._loggers_resumed = False
        self._ended: dict[str, Any] = {}  # the fit section of the run's summary.json before this process

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._trainer = trainer

    def state_dict(self) -> dict[str, Any]:
        trainer = self._trainer
        mid_epoch = trainer is not None and not trainer.fit_loop.epoch_loop.batch_progress.is_last_batch
        logged = next(
            (
                list(logger.logged)
                for logger in (trainer.loggers if trainer else [])
                if isinstance(getattr(logger, "logged", None), list)
            ),
            [],
        )
        return {"rng": rng_states(), "mid_epoch": mid_epoch, "logged": logged}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restore = state_dict.get("rng")
        self._restore_mid_epoch = bool(state_dict.get("mid_epoch"))
        self._logged = state_dict.get("logged")

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """How the earlier process of a resumed fit ended, as its summary says (read before it is rewritten)."""
        self._ended = read_summary(Path(trainer.default_root_dir)).get("fit", {})

    def _recorded(self, trainer: pl.Trainer) -> bool:
        """Whether the earlier process closed its loggers' records at the step this fit resumes at: its stage
        ended (finished, stopped or failed; a killed process leaves ``running``) there, so that its records
        hold exactly the run up to here and the new ones continue them."""
        status, step = self._ended.get("status"), self._ended.get("global_step")
        return status in ("finished", "interrupted", "failed") and step == trainer.global_step

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._restore is not None and _finished(trainer):  # resumed, and the loop had nothing left to run
            self.on_train_start(trainer, pl_module)
            rank_zero_info(
                "Nothing was trained: the checkpoint ends this run "
                f"({trainer.fit_loop.epoch_progress.current.processed} epochs, {trainer.global_step} steps; "
                f"--trainer.max_epochs={trainer.max_epochs}, "
                f"--trainer.max_steps={trainer.max_steps}). Raise them to train it further."
            )

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._restore is not None and not self._loggers_resumed:  # the loggers continue from the checkpoint
            self._loggers_resumed = True
            for logger in trainer.loggers:
                if callable(resume := getattr(logger, "resume_at", None)):
                    resume(trainer.global_step, self._logged, recorded=self._recorded(trainer))

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # After an epoch-end checkpoint the next draws are the new epoch's: restore now.
        if self._restore is not None and not self._restore_mid_epoch:
            set_rng_states(self._restore)
            self._restore = None

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        # After a checkpoint inside an epoch, restore once the loader has resumed its position (which
        # the uninterrupted run had reached long before): the next draws are the next step's.
        if self._restore is not None:
            set_rng_states(self._restore)
            self._restore = None

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any) -> None:
        if trainer.fit_loop.epoch_loop.batch_progress.is_last_batch:
            return  # the end of the epoch writes last.ckpt anyway
        by_steps = self.every_n_steps is not None and trainer.global_step % self.every_n_steps == 0
        by_time = self.every_n_minutes > 0 and time.monotonic() - self._saved_at >= 60 * self.every_n_minutes
        if by_steps or by_time:
            self._save_last(trainer)

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        """Stopped from outside at the end of a training step (Lightning's stop, which the command line's
        SIGTERM and SIGINT come to: :mod:`framework.signals`), not inside a validation, which the last
        checkpoint before it replays: write the step just finished, so that nothing trained is lost. A
        stop in the middle of a step (a KeyboardInterrupt, a second signal) writes nothing: the step's
        weights may be half updated."""
        at_step_end = isinstance(exception, SIGTERMException)
        if at_step_end and trainer.state.fn == TrainerFn.FITTING and trainer.state.stage == RunningStage.TRAINING:
            self._save_last(trainer)

    def _save_last(self, trainer: pl.Trainer) -> None:
        checkpoint = trainer.checkpoint_callback
        if checkpoint is not None and checkpoint.dirpath is not None and trainer.global_step > 0:
            trainer.save_checkpoint(Path(checkpoint.dirpath) / "last.ckpt")
            self._saved_at = time.monotonic()


def _finished(trainer: pl.Trainer) -> bool:
    """Whether the fit loop, as restored, has nothing left to train (its epoch or step limit reached)."""
    loop = trainer.fit_loop
    by_steps = loop.max_steps not in (None, -1) and trainer.global_step >= loop.max_steps
    by_epochs = loop.max_epochs not in (None, -1) and loop.epoch_progress.current.processed >= loop.max_epochs
    return by_steps or by_epochs
