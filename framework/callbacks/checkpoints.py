"""``best.ckpt`` by the task's metric, ``last.ckpt`` current at every epoch's end."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, Optional, Union

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.trainer.states import TrainerFn

from ..values import AllOrCount, NonNegativeInt


class RunCheckpoint(ModelCheckpoint):
    """Lightning's ``ModelCheckpoint`` for ``best.ckpt``, and ``last.ckpt`` written after every
    training epoch and every validation inside one, whether the monitored metric improved or not.

    Lightning 2.6 writes ``last.ckpt`` only in the step a top-k checkpoint is written, so a run
    whose metric stops improving keeps an old ``last.ckpt`` (a kill loses every epoch since),
    and an epoch without validation (``check_val_every_n_epoch``) writes none. Here the best
    checkpoint is chosen as Lightning chooses it (``monitor``, ``mode``, ties keep the earlier
    one), and ``last.ckpt`` always holds the newest state of the run, written after everything
    the epoch logs (:class:`~framework.TaskModule` logs its training metrics before this hook),
    so that a run resumed from it logs nothing twice and misses nothing.
    """

    def __init__(
        self,
        dirpath: Optional[str] = None,
        filename: Optional[str] = None,
        monitor: Optional[str] = None,
        verbose: bool = False,
        save_last: Optional[Union[bool, Literal["link"]]] = None,
        save_top_k: AllOrCount = 1,
        save_on_exception: bool = False,
        save_weights_only: bool = False,
        mode: Optional[Literal["min", "max"]] = None,
        auto_insert_metric_name: bool = True,
        every_n_train_steps: Optional[NonNegativeInt] = None,
        train_time_interval: Optional[timedelta] = None,
        every_n_epochs: Optional[NonNegativeInt] = None,
        save_on_train_epoch_end: Optional[bool] = None,
        enable_version_counter: bool = True,
    ) -> None:
        """Lightning's arguments, each typed with its domain; ``mode`` None: the direction of the
        monitored metric (the command line fills it in from the task)."""
        super().__init__(
            dirpath, filename, monitor, verbose, save_last, save_top_k, save_on_exception, save_weights_only,
            mode or "min", auto_insert_metric_name, every_n_train_steps, train_time_interval, every_n_epochs,
            save_on_train_epoch_end, enable_version_counter,
        )  # fmt: skip
        self._last_written_at: Optional[int] = None  # global step of the newest last.ckpt
        self._ours = False

    def _save_last_checkpoint(self, trainer: pl.Trainer, monitor_candidates: dict) -> None:
        if self._ours:  # Lightning's own calls (in the step best.ckpt improves) are left to write_last
            super()._save_last_checkpoint(trainer, monitor_candidates)

    def write_last(self, trainer: pl.Trainer) -> None:
        """Write ``last.ckpt`` now, unless nothing was trained since it was written."""
        fitting = trainer.state.fn == TrainerFn.FITTING and not trainer.sanity_checking and not trainer.fast_dev_run
        if fitting and self.save_last and self.dirpath is not None and self._last_written_at != trainer.global_step:
            self._ours = True
            try:
                super()._save_last_checkpoint(trainer, self._monitor_candidates(trainer))
            finally:
                self._ours = False
            self._last_written_at = trainer.global_step

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        self.write_last(trainer)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_validation_end(trainer, pl_module)
        if not trainer.fit_loop.epoch_loop.batch_progress.is_last_batch:  # a validation inside the epoch
            self.write_last(trainer)
