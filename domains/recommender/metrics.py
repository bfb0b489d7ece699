"""Ranking metrics over the rank of a target item among scored candidates.

For one query with candidate scores s (C,) and the target at column t, the rank is the
number of *other* candidates scoring at least as high as the target::

    r = |{c != t : s_c >= s_t}|        (0 = ranked first; ties count against the target)

so a model that gives every item the same score ranks every target last, never first.
Excluded candidates (history items, padding) carry a score of -inf and never count.

    HR@k    = mean [r < k]
    NDCG@k  = mean [r < k] / log2(r + 2)      (one relevant item: the ideal DCG is 1)
    MRR     = mean 1 / (r + 1)
"""

from __future__ import annotations

import torch
from torch import Tensor
from torchmetrics import Metric

from framework.errors import ConfigError
from framework.values import PositiveInt


def target_rank(scores: Tensor, column: Tensor) -> Tensor:
    """Ranks r (B,) of the targets at ``column`` (B,) among ``scores`` (B, C), as defined above."""
    if scores.dim() != 2 or column.shape != scores.shape[:1]:
        raise ValueError(
            f"ranking metrics: scores must be (B, C) and target (B,), got {tuple(scores.shape)} "
            f"and {tuple(column.shape)}"
        )
    target = scores.gather(1, column.unsqueeze(1))
    return (scores >= target).sum(1) - 1


class RankMetric(Metric):
    """Mean of ``gain(rank)`` over queries; ``update(scores (B, C), target_column (B,))``.

    Built by the tasks with torchmetrics' default options (no ``compute_on_cpu``, ``dist_sync_fn``
    ...: those take objects, and no task sets them)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0), dist_reduce_fx="sum")

    def gain(self, rank: Tensor) -> Tensor:
        raise TypeError(f"{type(self).__name__} must define gain(rank)")

    def update(self, scores: Tensor, target: Tensor) -> None:
        self.total += self.gain(target_rank(scores, target)).double().sum()
        self.count += target.numel()

    def compute(self) -> Tensor:
        return (self.total / self.count).float()


class CutoffMetric(RankMetric):
    """A rank metric with a cut-off k (only the top k positions count; the task's ``k``, checked
    here too for a caller in Python)."""

    def __init__(self, k: PositiveInt = 10) -> None:
        super().__init__()
        if k < 1:
            raise ConfigError(f"task.k must be at least 1, got {k}")
        self.k = k


class HitRate(CutoffMetric):
    """HR@k: the share of queries whose target is among the top k."""

    def gain(self, rank: Tensor) -> Tensor:
        return (rank < self.k).float()


class NDCG(CutoffMetric):
    """NDCG@k with one relevant item: 1 / log2(rank + 2) inside the top k, else 0."""

    def gain(self, rank: Tensor) -> Tensor:
        return torch.where(rank < self.k, 1.0 / torch.log2(rank.float() + 2.0), 0.0)


class MRR(RankMetric):
    """Mean reciprocal rank: 1 / (rank + 1), no cut-off."""

    def gain(self, rank: Tensor) -> Tensor:
        return 1.0 / (rank.float() + 1.0)
