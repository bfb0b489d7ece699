"""The most-popular baseline: every user gets the items most often seen in training."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.data.sizes import require_sizes
from framework.values import PositiveInt

from .base import check_history


class MostPopular(nn.Module):
    """Scores are item counts of the training split, the same for every user and position::

        s(i) = softplus(t) * log(1 + count_i)

    Nothing to learn: the counts are a buffer that :meth:`count` fills with every training
    interaction (``data.train_items``, all of each user's training items, whatever
    ``data.max_len``). The recommender tasks call it once the data is set up (``counted =
    True`` says so), and their training step on this model is a zero loss: no forward over the
    catalogue, no gradient (one epoch of empty steps, or ``trainer.limit_train_batches: 1``).
    The counts travel with the checkpoint. The parameter t only scales the scores (it never
    changes the ranking) and is frozen (softplus(t) = 1): it is there for the optimizer that the
    training loop builds, which needs a parameter. Before any counting every item ties, and
    ties rank the target last.

    Args:
        num_items: I.

    Shapes: as :mod:`.base` (``history`` only gives the batch and the positions).
    """

    #: The tasks count the training data into the model (:meth:`count`) instead of training it.
    counted = True

    def __init__(self, num_items: Optional[PositiveInt] = None) -> None:
        require_sizes("model", num_items=num_items)
        super().__init__()
        self.num_items = num_items
        self.register_buffer("counts", torch.zeros(num_items + 1))
        self.temperature = nn.Parameter(torch.tensor(0.5413), requires_grad=False)  # softplus(t) = 1

    @torch.no_grad()
    def count(self, items: Tensor) -> None:
        """Set the counts to those of ``items`` (any shape, 0 = padding): every training
        interaction once. Counting again replaces the counts, never adds to them."""
        items = items.reshape(1, -1).to(self.counts.device)
        check_history(self, items, self.num_items + 1)
        self.counts.copy_(torch.bincount(items.flatten(), minlength=self.num_items + 1)[: self.num_items + 1])
        self.counts[0] = 0

    def forward(
        self, history: Tensor, candidates: Optional[Tensor] = None, last: bool = False, where: Optional[Tensor] = None
    ) -> Tensor:
        check_history(self, history, self.num_items + 1)
        scores = F.softplus(self.temperature) * torch.log1p(self.counts)
        if candidates is not None:
            return scores[candidates]
        rows = (len(history),) if last else (int(where.sum()),) if where is not None else tuple(history.shape)
        return scores.expand(*rows, self.num_items + 1)
