"""Training losses of the recommender tasks, over the M real positions of a batch only.

A position with target item o (its score s_o) and m sampled negatives j_1 .. j_m (scores
s_1 .. s_m, uniform over the items outside the user's training row) gives:

* ``bce`` (SASRec's binary cross-entropy, one negative per position in the paper)::

      l = -log sigma(s_o) - sum_k log(1 - sigma(s_k)) = softplus(-s_o) + sum_k softplus(s_k)

* ``sampled_softmax``: the cross-entropy of the target among itself and its negatives::

      l = -s_o + log(exp(s_o) + sum_k exp(s_k))

* ``softmax``: the cross-entropy over every item 1 .. I (no negatives; costs I scores a position)::

      l = -s_o + log sum_{i=1..I} exp(s_i)

The loss of a batch is the mean over its M positions, 0 (with a zero gradient) when it has none:
a batch of users with one training item each (the shortest history leave-one-out allows) has no
position with a next item. A negative that still equals one of the
row's items after a few redraws (only when a row holds most of the catalogue) is left out of
its position's sum.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from framework.layers import mean_over

Loss = Literal["bce", "sampled_softmax", "softmax"]
LOSSES = ("bce", "sampled_softmax", "softmax")

#: Redraws of negatives that hit an item of the row; a hit left after them is masked.
REDRAWS = 3


def in_rows(sorted_rows: Tensor, values: Tensor) -> Tensor:
    """(M, C) bool: whether ``values[m, c]`` is one of ``sorted_rows[m]`` (each row ascending)."""
    where = torch.searchsorted(sorted_rows, values).clamp(max=sorted_rows.shape[1] - 1)
    return sorted_rows.gather(1, where) == values


def sample_training_negatives(rows: Tensor, owner: Tensor, count: int, num_items: int) -> tuple[Tensor, Tensor]:
    """``count`` uniform items of ``1 .. num_items`` for each of M positions, avoiding the items
    of the position's training row ``rows[owner[m]]`` (rows (B, L), 0 = padding; owner (M,)).

    Draws that hit a row item are drawn again (``REDRAWS`` times, with no host
    synchronisation); returns the negatives (M, count) and the hits left (M, count) bool, to
    be masked out of the loss. Uses torch's global generator on the rows' device (seeded by
    ``seed_everything``)."""
    own = rows.sort(1).values.index_select(0, owner)
    shape = (len(owner), count)
    negatives = torch.randint(1, num_items + 1, shape, device=rows.device)
    for _ in range(REDRAWS):
        negatives = torch.where(
            in_rows(own, negatives), torch.randint(1, num_items + 1, shape, device=rows.device), negatives
        )
    return negatives, in_rows(own, negatives)


def bce(positive: Tensor, negative: Tensor, hit: Tensor) -> Tensor:
    """Mean over positions of softplus(-s_o) + sum_k softplus(s_k), hits left out: positive (M,),
    negative and hit (M, m)."""
    return mean_over(F.softplus(-positive) + F.softplus(negative).masked_fill(hit, 0.0).sum(1))


def candidate_logits(positive: Tensor, negative: Tensor, hit: Tensor) -> Tensor:
    """(M, 1 + m): the target's score in column 0, then the negatives' (hits at -inf)."""
    return torch.cat([positive.unsqueeze(1), negative.masked_fill(hit, float("-inf"))], 1)


def sampled_softmax(positive: Tensor, negative: Tensor, hit: Tensor) -> Tensor:
    """Mean cross-entropy of column 0 of :func:`candidate_logits` (0 over no position)."""
    logits = candidate_logits(positive, negative, hit)
    return full_softmax(logits, torch.zeros(len(logits), dtype=torch.long, device=logits.device))


def full_softmax(scores: Tensor, target: Tensor) -> Tensor:
    """Mean cross-entropy of the ``target`` columns (M,) of ``scores`` (M, C) (0 over no position)."""
    return mean_over(F.cross_entropy(scores, target, reduction="none"))


def without_padding(scores: Tensor) -> Tensor:
    """Scores over item ids 0 .. I with column 0 (padding) set to -inf."""
    return scores.index_fill(-1, torch.tensor([0], device=scores.device), float("-inf"))
