"""``predict`` writes its predictions into the run folder, in a format per task
(:class:`framework.runs.PredictionSink`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import lightning.pytorch as pl
from lightning.pytorch.callbacks import BasePredictionWriter
from lightning.pytorch.utilities import rank_zero_info

from ..runs import PredictionSink


class PredictionWriter(BasePredictionWriter):
    """Hand every predicted batch to the task's writer; say at the end where the files are.

    Lightning keeps the predictions in memory as well (``trainer.predict`` returns them).
    """

    def __init__(self) -> None:
        super().__init__(write_interval="batch")
        self.sink: Optional[PredictionSink] = None

    def on_predict_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        folder = Path(trainer.default_root_dir) / "predictions"
        self.sink = PredictionSink(folder, trainer.global_rank, trainer.world_size)

    def write_on_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        prediction: Any,
        batch_indices: Optional[Sequence[int]],
        batch: Any,
        batch_idx: int,
        dataloader_idx: int,
    ) -> None:
        pl_module.task.write_predictions(prediction, batch, self.sink)

    def on_predict_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.sink is None or not self.sink.written:
            return
        files = self.sink.written
        where = ", ".join(map(str, files)) if len(files) <= 3 else f"{len(files)} files in {self.sink.folder}"
        rank_zero_info(f"Predictions of {self.sink.index} examples: {where}")
