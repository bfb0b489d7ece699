"""Statistics of every block's attention, logged as metrics every validation epoch."""

from __future__ import annotations

import math
from typing import Optional

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from torch import nn

from ..attention import blocks_in, capture
from ..attention.statistics import RowStatistics
from ..evaluation.maps import gold_masses, probe_statistics
from ..values import NonNegativeInt, PositiveInt


def watch_validation_step(pl_module: pl.LightningModule, blocks: list[str], probes: int) -> Optional[capture]:
    """A capture with ``probes`` that the module's next validation step runs inside
    (:meth:`~framework.TaskModule.watch_next_step`), so that the step itself records the rows and
    no second pass is needed; None where that could change the step: a capture of full maps
    (``probes`` 0), or a block that does not compute its probe rows itself (``gives_probe_rows``),
    which a capture would turn from its fused path to its explicit weights."""
    model = getattr(pl_module, "model", None)
    if not probes or not callable(getattr(pl_module, "watch_next_step", None)) or not isinstance(model, nn.Module):
        return None
    if not all(getattr(block, "gives_probe_rows", False) for block in blocks_in(model).values()):
        return None
    rows = capture(model, *blocks, probes=probes)
    pl_module.watch_next_step("val", rows)
    return rows


class AttentionStatistics(Callback):
    """Log, every validation epoch, statistics of each block's attention rows, per head, from
    a capture with probes (the exact rows of ``probes`` queries per call; fused paths stay fused,
    no N x N matrix is built): ``attention/<block>/<statistic>`` (heads averaged) and
    ``attention/<block>/head<j>/<statistic>``, the statistics of
    :mod:`framework.attention.statistics`: ``entropy``, ``entropy_ratio`` (to the uniform
    entropy over the valid keys), ``max_weight``, ``top<k>_mass``, ``max_logit`` (where the
    block has its energies) and ``lse`` (the kernel's log-sum-exp of every query, where it has
    one: FlexAttention, criss-cross). Where the task knows gold attention for the batch
    (:meth:`~framework.evaluation.protocol.EvaluationHooks.gold_views`: bAbI's supporting facts,
    the dates' alignments, the digit scenes' drawn digit), the mass on the gold keys too,
    ``attention/gold/<view>/mass``.

    The first validation batch's own step runs under the capture where that leaves it unchanged
    (:func:`watch_validation_step`), else the batch runs once more under it (training pays
    nothing; the cost is measured by ``tools/bench_probes.py``). The metrics go through ``LightningModule.log``
    to every logger (CSV, W&B) with the epoch's validation metrics.

    Args:
        every_n_epochs: how often; 0 turns the statistics off.
        probes: probe queries per call of a block (spread evenly over its query grid; every
            query of a grid that has no more).
        top_k: k of the top-k mass.
        blocks: which blocks (glob patterns over module names, or registry names); all by default.
        per_head: also log each head's statistics (blocks of several heads).
        gold: also log the mass on the gold keys, where the task has gold attention.
    """

    def __init__(
        self,
        every_n_epochs: NonNegativeInt = 1,
        probes: PositiveInt = 64,
        top_k: PositiveInt = 5,
        blocks: Optional[list[str]] = None,
        per_head: bool = True,
        gold: bool = True,
    ) -> None:
        self.every_n_epochs, self.probes, self.top_k = every_n_epochs, probes, top_k
        self.blocks, self.per_head, self.gold = blocks or [], per_head, gold
        #: the statistics of the last validation that computed them, and when (epoch, global step)
        self.results: dict[str, RowStatistics] = {}
        self.computed_at: Optional[tuple[int, int]] = None
        self._rows: Optional[capture] = None  # the capture the first validation step runs inside

    def _due(self, trainer: pl.Trainer, batch_idx: int, dataloader_idx: int) -> bool:
        return (
            not batch_idx
            and not dataloader_idx
            and not trainer.sanity_checking
            and bool(self.every_n_epochs)
            and not (trainer.current_epoch + 1) % self.every_n_epochs
        )

    def fresh(self, trainer: pl.Trainer) -> Optional[dict[str, RowStatistics]]:
        """The statistics of the validation now running or just run, if this callback computed them."""
        return self.results if self.computed_at == (trainer.current_epoch, trainer.global_step) else None

    def on_validation_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: object, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._rows = (
            watch_validation_step(pl_module, self.blocks, self.probes)
            if self._due(trainer, batch_idx, dataloader_idx)
            else None
        )

    def on_validation_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: object,
        batch: object,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if not self._due(trainer, batch_idx, dataloader_idx):
            return
        model, task, rows, self._rows = pl_module.model, pl_module.task, self._rows, None
        self.results = probe_statistics(
            model, task, batch, probes=self.probes, blocks=self.blocks, top_k=self.top_k, rows=rows
        )
        self.computed_at = (trainer.current_epoch, trainer.global_step)
        metrics = self.metrics(self.results)
        if self.gold:
            metrics.update(gold_masses(model, task, batch))
        for name, value in metrics.items():
            pl_module.log(name, value, on_step=False, on_epoch=True, sync_dist=True, batch_size=1)

    def metrics(self, results: dict[str, RowStatistics]) -> dict[str, float]:
        """The logged numbers: each statistic with heads averaged, and per head (NaN left out)."""
        metrics = {}
        for key, stats in results.items():
            for name, values in stats.values().items():
                metrics[f"attention/{key}/{name}"] = float(values.nanmean())
                if self.per_head and stats.heads > 1:
                    metrics.update({f"attention/{key}/head{h}/{name}": float(v) for h, v in enumerate(values)})
        return {name: value for name, value in metrics.items() if math.isfinite(value)}
