"""Early stopping as a config section of its own, ``early_stopping`` (as ``checkpoint`` is), so
that one argument changes without restating the trainer's callbacks list:

    python -m framework fit --config domains/graph/gat_cora.yaml --early_stopping.patience=5

Off while ``patience`` is unset (the default). Its ``monitor`` defaults to the checkpoint's (the
task's metric), and its ``mode`` is the metric's direction from the task's table
(``Task.directions``); a ``mode`` given that contradicts the table is refused by the command line.
"""

from __future__ import annotations

from typing import Literal, Optional

import lightning.pytorch as pl
from lightning.pytorch.callbacks import EarlyStopping

from ..values import AnyReal, NonNegativeFloat, NonNegativeInt


class RunEarlyStopping(EarlyStopping):
    """Lightning's ``EarlyStopping``, with each argument's domain declared, doing nothing while
    ``patience`` is None.

    Args:
        monitor: the validation metric watched (default: the checkpoint's).
        min_delta: the least change of ``monitor`` that counts as an improvement.
        patience: validations without improvement before training stops; None: no early stopping.
        mode: ``min`` or ``max``; default (and checked against) the metric's direction.
        stopping_threshold: stop as soon as ``monitor`` reaches this value.
        divergence_threshold: stop as soon as ``monitor`` is worse than this value.
        check_on_train_epoch_end: check after the training epoch instead of after validation.
        strict, check_finite, verbose, log_rank_zero_only: as Lightning's.
    """

    def __init__(
        self,
        monitor: Optional[str] = None,
        min_delta: NonNegativeFloat = 0.0,
        patience: Optional[NonNegativeInt] = None,
        verbose: bool = False,
        mode: Optional[Literal["min", "max"]] = None,
        strict: bool = True,
        check_finite: bool = True,
        stopping_threshold: Optional[AnyReal] = None,
        divergence_threshold: Optional[AnyReal] = None,
        check_on_train_epoch_end: Optional[bool] = None,
        log_rank_zero_only: bool = False,
    ) -> None:
        super().__init__(
            monitor=monitor or "",
            min_delta=min_delta,
            patience=patience or 0,
            verbose=verbose,
            mode=mode or "min",
            strict=strict,
            check_finite=check_finite,
            stopping_threshold=stopping_threshold,
            divergence_threshold=divergence_threshold,
            check_on_train_epoch_end=check_on_train_epoch_end,
            log_rank_zero_only=log_rank_zero_only,
        )
        self.enabled = patience is not None

    def _run_early_stopping_check(self, trainer: pl.Trainer) -> None:
        if self.enabled:
            super()._run_early_stopping_check(trainer)
