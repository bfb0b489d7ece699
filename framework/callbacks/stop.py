"""The part of a command's stop (:mod:`framework.signals`) that Lightning leaves out."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities.exceptions import SIGTERMException

from .. import signals


class StopAtBatchEnd(Callback):
    """Lightning stops fit, validate and test at the end of the batch in which it was told to stop
    (``trainer.received_sigterm``); ``predict`` it lets run to its end: here it stops as the others
    do, its predictions of the batches done written. A stage that would start after the command
    was told to stop (the one before got the signal in its last batch and ended) does not start; a
    validation inside a fit that is stopping runs, as Lightning stops it."""

    def on_predict_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        if trainer.received_sigterm:
            raise SIGTERMException

    def _not_after_a_stop(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if signals.received() is not None and not trainer.received_sigterm:  # not the fit stopping at its batch's end
            raise signals.Stopped()

    on_train_start = on_validation_start = on_test_start = on_predict_start = _not_after_a_stop
