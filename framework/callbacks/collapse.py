"""The collapse monitor: a warning when a block's attention stops doing anything while the model learns."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Optional

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import WandbLogger
from lightning.pytorch.utilities import rank_zero_only

from ..attention.statistics import RowStatistics
from ..evaluation.maps import probe_statistics
from ..values import NonNegativeInt, PositiveInt, Probability
from .attention_stats import AttentionStatistics

#: The kinds of collapse, and what the warning says of each.
KINDS = {
    "uniform": "uniform (entropy ratio {value:.3f}: every valid key weighed alike)",
    "one_hot": "one-hot (max weight {value:.3f}, on the same key for most queries)",
    "frozen": "frozen (Kendall tau {value:.3f} between validations, unchanged since validation {since})",
}
#: Lightning's logger of rank-zero messages (what ``rank_zero_info`` writes to), at the warning level.
_LOG = logging.getLogger("lightning.pytorch.utilities.rank_zero")
#: Rows and keys compared by Kendall's tau per head (a strided subset of longer rows).
TAU_ROWS, TAU_KEYS = 64, 1024


@dataclass
class _Streak:
    """Consecutive validations on which a condition held: from ``start``, the last value."""

    start: int = -1
    length: int = 0
    value: float = math.nan

    def update(self, held: bool, value: float, at: int) -> None:
        self.start, self.length = (self.start if self.length else at, self.length + 1) if held else (-1, 0)
        self.value = value


@dataclass
class _Watch:
    streaks: dict[str, _Streak] = field(default_factory=lambda: {kind: _Streak() for kind in KINDS})
    fired: set[str] = field(default_factory=set)


class AttentionCollapse(Callback):
    """Warn, naming the block and head, when its attention collapses while the loss still falls:

    * ``uniform``: the entropy ratio of its rows (to the uniform entropy over the valid keys)
      is at least ``uniform_above``: it weighs every key alike, so it selects nothing;
    * ``one_hot``: the mean largest weight is at least ``one_hot_above`` and at least
      ``same_key_above`` of an example's queries put it on the same key (an attention sink);
    * ``frozen``: Kendall's tau between its probe rows at consecutive validations is at least
      ``frozen_tau``, since validation ``frozen_from`` or earlier: its maps have not changed
      since the start (a block whose gradient does not reach its scores).

    A condition counts when it held on ``patience`` validations in a row (comparisons, for
    ``frozen``) over which the monitored ``loss`` fell. Each event is one line on rank zero
    and, with a W&B logger, a W&B alert; an event is told once per run. The statistics are
    those of :class:`~framework.callbacks.AttentionStatistics` when it runs (no second pass),
    else computed here in the same way on the first validation batch.

    Args:
        enabled: False turns the monitor off.
        uniform_above, one_hot_above, same_key_above, frozen_tau: the thresholds above.
        patience: validations in a row a condition must hold.
        frozen_from: the validation (0 = the first) by which a frozen streak must have begun.
        loss: the metric that must fall (``val/loss``); absent, the monitor says so once and
            judges without it.
        probes, blocks: as for ``AttentionStatistics``, when this callback computes them.
    """

    def __init__(
        self,
        enabled: bool = True,
        uniform_above: Probability = 0.995,
        one_hot_above: Probability = 0.98,
        same_key_above: Probability = 0.9,
        frozen_tau: Probability = 0.99,
        patience: PositiveInt = 2,
        frozen_from: NonNegativeInt = 1,
        loss: str = "val/loss",
        probes: PositiveInt = 64,
        blocks: Optional[list[str]] = None,
    ) -> None:
        self.enabled, self.patience, self.frozen_from, self.loss = enabled, patience, frozen_from, loss
        self.uniform_above, self.one_hot_above, self.same_key_above = uniform_above, one_hot_above, same_key_above
        self.frozen_tau, self.probes, self.blocks = frozen_tau, probes, blocks or []
        self.validations = 0
        self.losses: list[float] = []
        self.watches: dict[tuple[str, int], _Watch] = {}
        self.previous: dict[str, RowStatistics] = {}
        self._batch: Any = None
        self._said_no_loss = False

    def on_validation_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: object,
        batch: object,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if self.enabled and not batch_idx and not dataloader_idx and not trainer.sanity_checking:
            self._batch = batch

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not self.enabled or trainer.sanity_checking or self._batch is None:
            return
        shared = next((c.fresh(trainer) for c in trainer.callbacks if isinstance(c, AttentionStatistics)), None)
        if shared is None:
            pl_module.model.eval()
            shared = probe_statistics(
                pl_module.model, pl_module.task, self._batch, probes=self.probes, blocks=self.blocks, top_k=5
            )
        self._batch = None
        loss = trainer.callback_metrics.get(self.loss)
        if loss is None and not self._said_no_loss:
            rank_zero_only(_LOG.warning)(
                f"attention collapse monitor: no {self.loss!r} is logged, so it warns "
                "without checking that the loss falls (set attention_collapse.loss)"
            )
            self._said_no_loss = True
        for line, title in self.observe(shared, None if loss is None else float(loss)):
            self.say(trainer, line, title)

    def observe(self, results: dict[str, RowStatistics], loss: Optional[float]) -> list[tuple[str, str]]:
        """Take one validation's statistics and loss; the (line, title) of each new event, one per
        block and kind of collapse, naming the heads it struck."""
        at = self.validations
        self.validations += 1
        self.losses.append(math.nan if loss is None else loss)
        events = []
        for key, stats in results.items():
            taus = self._taus(self.previous.get(key), stats)
            struck: dict[str, list[tuple[int, _Streak]]] = {}
            for head in range(stats.heads):
                watch = self.watches.setdefault((key, head), _Watch())
                values = {
                    "uniform": float(stats.entropy_ratio[head]),
                    "one_hot": float(stats.max_weight[head]),
                    "frozen": taus[head],
                }
                held = {
                    "uniform": values["uniform"] >= self.uniform_above,
                    "one_hot": values["one_hot"] >= self.one_hot_above
                    and float(stats.same_key[head]) >= self.same_key_above,
                    "frozen": taus[head] >= self.frozen_tau,
                }
                for kind, streak in watch.streaks.items():
                    streak.update(held[kind], values[kind], at)
                    first = self._first(kind, streak)
                    if (
                        kind in watch.fired
                        or streak.length < self.patience
                        or not self._fell(first, at)
                        or (kind == "frozen" and first > self.frozen_from)
                    ):
                        continue
                    watch.fired.add(kind)
                    struck.setdefault(kind, []).append((head, streak))
            for kind, heads in struck.items():
                streak = heads[0][1]
                value = sum(s.value for _, s in heads) / len(heads)
                first = self._first(kind, streak)
                named = (
                    f" head{'s' if len(heads) > 1 else ''} {', '.join(str(h) for h, _ in heads)}"
                    if stats.heads > 1
                    else ""
                )
                what = KINDS[kind].format(value=value, since=first)
                events.append(
                    (
                        f"attention collapse: {key}{named}: {what}, {streak.length} validations in a row"
                        f"{self._fell_text(first, at)}",
                        f"attention collapse: {key} {kind}",
                    )
                )
        self.previous = results
        return events

    @staticmethod
    def _first(kind: str, streak: _Streak) -> int:
        """The validation a streak's span starts at (for ``frozen``, the one before its first comparison)."""
        return streak.start - 1 if kind == "frozen" else streak.start

    def _fell(self, first: int, last: int) -> bool:
        before, now = self.losses[first], self.losses[last]
        return math.isnan(before) or math.isnan(now) or now < before

    def _fell_text(self, first: int, last: int) -> str:
        before, now = self.losses[first], self.losses[last]
        return (
            "" if math.isnan(before) or math.isnan(now) else f", while {self.loss} fell from {before:.4g} to {now:.4g}"
        )

    @staticmethod
    def _taus(before: Optional[RowStatistics], now: RowStatistics) -> list[float]:
        """Per head, the mean Kendall tau between the rows of two validations (NaN without both)."""
        if before is None or before.rows.shape != now.rows.shape:
            return [math.nan] * now.heads
        from ..evaluation.measures import kendall_tau_b

        taus = []
        keys = torch.arange(0, now.rows.shape[-1], max(1, now.rows.shape[-1] // TAU_KEYS))
        for head in range(now.heads):
            keep = (before.counted[:, head] & now.counted[:, head]).flatten()
            a, b, valid = (t[:, head].flatten(0, 1)[keep][:TAU_ROWS, keys] for t in (before.rows, now.rows, now.valid))
            tau = kendall_tau_b(a, b, valid)  # over the valid keys: uniform rows are constant, no tau
            tau = tau[~tau.isnan()]
            taus.append(float(tau.mean()) if len(tau) else math.nan)
        return taus

    @staticmethod
    def say(trainer: pl.Trainer, line: str, title: str) -> None:
        """The event as one line on rank zero, and a W&B alert where a W&B logger is present."""
        rank_zero_only(_LOG.warning)(line)
        if not trainer.is_global_zero:
            return
        for logger in trainer.loggers:
            if isinstance(logger, WandbLogger):
                import wandb

                logger.experiment.alert(title=title[:64], text=line, level=wandb.AlertLevel.WARN, wait_duration=0)
