"""GRU4Rec (Hidasi et al., Session-based Recommendations with Recurrent Neural Networks,
ICLR 2016): a GRU over the history, the no-attention recurrent baseline."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from framework.layers import run_packed
from framework.values import Fraction, PositiveInt

from .base import SequentialRecommender


def realign(x: Tensor, shift: Tensor) -> Tensor:
    """Roll every row of x (B, N, ...) left by ``shift`` (B,) positions: a left-padded row
    with ``shift`` pads becomes right-padded, and ``realign(x, -shift)`` undoes it."""
    n = x.shape[1]
    index = (torch.arange(n, device=x.device) + shift.unsqueeze(1)) % n  # (B, N)
    return x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


class GRU4Rec(SequentialRecommender):
    """Embeddings, a GRU over the real items of each history (packed: padding never enters
    the recurrence), a linear map to D, and dot products with the shared item embeddings::

        h_n = GRU(E[x_1], ..., E[x_n]),   s(n, i) = (W h_n + b) . E_i

    Trained with the same full cross-entropy as SASRec here (the paper used session-parallel
    batches with ranking losses).

    Args:
        num_items: I.
        dim: D, the embedding width.
        hidden: GRU width.
        layers: stacked GRU layers.
        dropout: on the embeddings and between GRU layers.

    Shapes: see :mod:`.base`.
    """

    def __init__(
        self,
        num_items: Optional[PositiveInt] = None,
        dim: PositiveInt = 64,
        hidden: PositiveInt = 100,
        layers: PositiveInt = 1,
        dropout: Fraction = 0.2,
    ) -> None:
        super().__init__(num_items, dim)
        self.dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(dim, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.out = nn.Linear(hidden, dim)

    def encode(self, history: Tensor, offset: int = 0) -> Tensor:
        lengths = (history > 0).sum(1)
        shift = history.shape[1] - lengths
        x = realign(self.dropout(self.items(history)), shift)
        states, _ = run_packed(self.gru, x, lengths)
        return self.out(realign(states, -shift))
