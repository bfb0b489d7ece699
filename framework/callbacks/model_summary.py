"""The model summary a fit prints when it starts, without a FLOPs column of zeros."""

from __future__ import annotations

import logging
from typing import Any

from lightning.pytorch import callbacks
from lightning.pytorch.utilities.model_summary.model_summary import _format_summary_table

log = logging.getLogger("lightning.pytorch.callbacks.model_summary")

#: The column and the total line of the FLOPs Lightning counts while running an ``example_input_array``.
FLOPS_COLUMN, FLOPS_TOTAL = "FLOPs", "Total Flops"


class ModelSummary(callbacks.ModelSummary):
    """Lightning's summary (name, type, parameters, mode of each module). Lightning counts FLOPs
    only by running the LightningModule's ``example_input_array``; without one it prints a FLOPs
    column and a total of zeros, which this summary leaves out. A module with an example input
    keeps them, with its real counts."""

    @staticmethod
    def summarize(
        summary_data: list[tuple[str, list[str]]],
        total_parameters: int,
        trainable_parameters: int,
        model_size: float,
        total_training_modes: dict[str, int],
        total_flops: int,
        **summarize_kwargs: Any,
    ) -> None:
        counted = total_flops > 0
        columns = summary_data if counted else [column for column in summary_data if column[0] != FLOPS_COLUMN]
        table = _format_summary_table(
            total_parameters, trainable_parameters, model_size, total_training_modes, total_flops, *columns
        )
        lines = table.splitlines()
        log.info("\n" + "\n".join(lines if counted else [line for line in lines if not line.endswith(FLOPS_TOTAL)]))
