"""The most-popular baseline: every user gets the items most often seen in training."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import check_history


class MostPopular(nn.Module):
    """Scores are item counts of the training split, the same for every user and position::

        s(i) = softplus(t) * log(1 + count_i)

    The counts are a buffer filled by :meth:`observe`, which the recommender tasks call
    with every training row during ``fit``: one epoch counts the training split (E epochs
    count it E times, the same ranking), and the counts travel with the checkpoint. A row
    holds a user's last ``data.max_len + 1`` training items, so ``data.max_len`` at least
    the longest history counts every training interaction. The one parameter t only scales the scores, so
    that the optimizer and the cross-entropy have something to act on; it never changes
    the ranking. Before any training every item ties, and ties rank the target last.

    Args:
        num_items: I.

    Shapes: as :mod:`.base` (``history`` only gives the batch and the positions).
    """

    def __init__(self, num_items: int) -> None:
        super().__init__()
        if num_items < 1:
            raise ValueError(f"model.num_items must be at least 1, got {num_items}")
        self.num_items = num_items
        self.register_buffer("counts", torch.zeros(num_items + 1))
        self.temperature = nn.Parameter(torch.tensor(0.5413))  # softplus(t) = 1

    @torch.no_grad()
    def observe(self, sequences: Tensor) -> None:
        """Count the items of training rows (any shape, 0 = padding)."""
        check_history(self, sequences.reshape(len(sequences), -1), self.num_items + 1)
        self.counts += torch.bincount(sequences.flatten(), minlength=self.num_items + 1)[: self.num_items + 1]
        self.counts[0] = 0

    def forward(self, history: Tensor, candidates: Optional[Tensor] = None, last: bool = False) -> Tensor:
        check_history(self, history, self.num_items + 1)
        scores = F.softplus(self.temperature) * torch.log1p(self.counts)
        if candidates is not None:
            return scores[candidates]
        shape = (len(history), self.num_items + 1) if last else (*history.shape, self.num_items + 1)
        return scores.expand(shape)
