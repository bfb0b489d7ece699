"""Padded tensors of histories, and the datasets that serve them to the loaders.

Histories are left-padded with 0, so the most recent item is always the last position
(the position a next-item model reads, and the one SASRec's learned positions key on).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from framework.data.tensors import TensorExamples

from .interactions import Histories


def left_pad(histories: Histories, length: int) -> Tensor:
    """The last ``length`` items of each history, left-padded with 0: (U, length) int64."""
    rows = torch.zeros(len(histories), length, dtype=torch.long)
    for row, history in zip(rows, histories):
        recent = history[-length:]
        if len(recent):
            row[length - len(recent):] = torch.from_numpy(recent)
    return rows


def sample_negatives(seen: Histories, num_items: int, count: int, rng: np.random.Generator) -> Tensor:
    """``count`` distinct items per user, uniform over ``1 .. num_items`` minus the user's ``seen``
    items (history and target), drawn once from ``rng``: (U, count) int64."""
    rows = []
    for items in seen:
        allowed = np.setdiff1d(np.arange(1, num_items + 1), items, assume_unique=False)
        if len(allowed) < count:
            raise ValueError(f"data.num_negatives={count} but a user has only {len(allowed)} unseen items "
                             f"of {num_items}; lower data.num_negatives")
        rows.append(rng.choice(allowed, count, replace=False))
    return torch.from_numpy(np.stack(rows)) if rows else torch.zeros(0, count, dtype=torch.long)


class TrainSequences(TensorExamples):
    """One row per user: the last ``max_len + 1`` training items, left-padded.

    A task reads a row as inputs and targets (next item: ``row[:-1]`` predicts ``row[1:]``;
    masked item: masked positions of ``row[1:]``). Items: ``{"sequence": (max_len + 1,)}``.
    """

    fields = ("sequence",)

    def __init__(self, train: Histories, max_len: int) -> None:
        self.sequence = left_pad(train, max_len + 1)


class RankingQueries(TensorExamples):
    """One query per user: rank the ``target`` item given the ``history``.

    Items: ``history`` (max_len,) the last items, left-padded; ``target`` () the held-out
    item; ``seen`` (S,) every history item (left-padded to the longest history), which full
    ranking excludes from the candidates; ``negatives`` (K,) items outside history and
    target for the sampled protocol; ``user`` () the user's index.
    """

    fields = ("history", "target", "seen", "negatives", "user")

    def __init__(self, histories: Histories, targets: np.ndarray, max_len: int, negatives: Tensor) -> None:
        self.history = left_pad(histories, max_len)
        self.seen = left_pad(histories, max(1, max((len(h) for h in histories), default=1)))
        self.target = torch.from_numpy(np.asarray(targets, dtype=np.int64))
        self.negatives = negatives
        self.user = torch.arange(len(self.target))
