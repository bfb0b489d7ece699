"""What every recommender model shares: the scoring interface the tasks call.

    scores = model(history, candidates=None, last=False, where=None)

* ``history`` (B, N): item ids, left-padded with 0, most recent item last.
* ``last=False``: scores at every position n (the prediction after items ..n);
  ``last=True``: at the last position only (the next item after the whole history);
  ``where`` (B, N) bool: at the M positions where it is True only, in row-major order
  (training scores the real positions of short histories only, not the padding).
* ``candidates=None``: every item id 0 .. I, scores (B, N, I + 1), (B, I + 1) or (M, I + 1);
  column 0 is padding, which the tasks mask. ``candidates`` (B, N, C), (B, C) or (M, C):
  those items only, scores of the same shape.

Real histories are short (a median of a handful of items against a ``max_len`` of 50), so
the models cut the columns that are padding in every row of the batch before encoding
(:func:`leading_padding`); positions keep their indices, so the states of the items do not
change.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.values import NonNegativeInt, PositiveInt


def check_history(model: nn.Module, history: Tensor, vocabulary: int) -> None:
    """History ids must lie in ``0 .. vocabulary - 1``: a clear error instead of an index error."""
    if history.dim() != 2 or history.dtype != torch.long:
        raise ValueError(
            f"{type(model).__name__}: history must be (B, N) int64 item ids, got {tuple(history.shape)} {history.dtype}"
        )
    if history.numel() and (int(history.max()) >= vocabulary or int(history.min()) < 0):
        raise ConfigError(
            f"{type(model).__name__}: history holds item id {int(history.max())} but "
            f"model.num_items={model.num_items}; set model.num_items to the data's item count "
            "(printed when the data is set up)"
        )


def leading_padding(history: Tensor, where: Optional[Tensor] = None) -> int:
    """Columns on the left that are padding in every row of ``history`` (B, N) and chosen by
    no ``where``; at most N - 1 (one host synchronisation)."""
    used = (history > 0).any(0)
    if where is not None:
        used |= where.any(0)
    return int(torch.where(used.any(), used.int().argmax(), history.shape[1] - 1))


class SequentialRecommender(nn.Module):
    """Base of the models with one state per position: a subclass defines :meth:`encode`.

    Scores are dot products of the states with the item embeddings, shared between input
    and output (SASRec): s(n, i) = h_n . E_i.

    Args:
        num_items: I; item ids are 1 .. I, 0 is padding.
        dim: D, the width of embeddings and states.
        extra_tokens: ids after I that the model uses itself (BERT4Rec's [mask]).
    """

    def __init__(self, num_items: Optional[PositiveInt], dim: PositiveInt, extra_tokens: NonNegativeInt = 0) -> None:
        super().__init__()
        require_sizes("model", num_items=num_items)
        self.num_items, self.dim = num_items, dim
        self.items = nn.Embedding(num_items + 1 + extra_tokens, dim, padding_idx=0)
        nn.init.normal_(self.items.weight, std=1.0 / math.sqrt(dim))
        with torch.no_grad():
            self.items.weight[0].zero_()

    def encode(self, history: Tensor, offset: int = 0) -> Tensor:
        """States (B, N, D) of a left-padded history (B, N) whose first column is position
        ``offset`` (the columns before it were padding and were cut)."""
        raise TypeError(f"{type(self).__name__} must define encode(history, offset=0)")

    def forward(
        self, history: Tensor, candidates: Optional[Tensor] = None, last: bool = False, where: Optional[Tensor] = None
    ) -> Tensor:
        check_history(self, history, self.items.num_embeddings)
        start = leading_padding(history, None if last else where)
        states = self.encode(history[:, start:], offset=start)
        if last:
            return self.score(states[:, -1], candidates)
        if where is not None:
            return self.score(states[where[:, start:]], candidates)
        return self.score(F.pad(states, (0, 0, start, 0)), candidates)

    def score(self, states: Tensor, candidates: Optional[Tensor]) -> Tensor:
        """States (..., D) against every item (..., I + 1) or against ``candidates`` (..., C)."""
        if candidates is None:
            return states @ self.items.weight[: self.num_items + 1].T
        return (self.items(candidates) @ states.unsqueeze(-1)).squeeze(-1)
