"""Padded tensors of histories, and the datasets that serve them to the loaders.

Histories are left-padded with 0, so the most recent item is always the last position
(the position a next-item model reads, and the one SASRec's learned positions key on).

The data modules keep every user's items in one flat array, user after user (``items``), and
a user's history as a range ``starts[u] .. ends[u]`` of it; the padded rows are cut from it
in one vectorised step, with no Python loop over users.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Optional, Union

import numpy as np
import torch
from torch import Tensor

from framework.data.tensors import Batch, TensorExamples

from .interactions import Histories


def flatten(histories: Histories) -> tuple[Tensor, Tensor]:
    """One flat int64 tensor of every history, user after user, and the offsets (U + 1,) of
    the users' ranges in it."""
    lengths = np.fromiter(map(len, histories), np.int64, len(histories))
    items = np.concatenate(histories).astype(np.int64) if histories else np.zeros(0, np.int64)
    return torch.from_numpy(items), torch.from_numpy(np.r_[0, np.cumsum(lengths)])


def left_window(items: Tensor, starts: Tensor, ends: Tensor, length: int) -> Tensor:
    """The last ``length`` items of each range ``items[starts[u]:ends[u]]``, left-padded with 0:
    (U, length) int64."""
    position = ends.unsqueeze(1) - length + torch.arange(length, device=items.device)
    inside = position >= starts.unsqueeze(1)
    if not len(items):
        return torch.zeros(len(starts), length, dtype=torch.long, device=items.device)
    return torch.where(inside, items[position.clamp(min=0)], 0)


def left_pad(histories: Histories, length: int) -> Tensor:
    """The last ``length`` items of each history, left-padded with 0: (U, length) int64."""
    items, offsets = flatten(histories)
    return left_window(items, offsets[:-1], offsets[1:], length)


class TrainSequences(TensorExamples):
    """One row per user: the last ``max_len + 1`` training items, left-padded.

    A task reads a row as inputs and targets (next item: ``row[:-1]`` predicts ``row[1:]``;
    masked item: masked positions of ``row[1:]``). Items: ``{"sequence": (max_len + 1,)}``.

    Args:
        train: the training histories, or the flat ``items`` with ``starts`` and ``ends``.
    """

    fields = ("sequence",)

    def __init__(
        self,
        train: Union[Histories, Tensor],
        max_len: int,
        starts: Optional[Tensor] = None,
        ends: Optional[Tensor] = None,
    ) -> None:
        if isinstance(train, Tensor):
            self.sequence = left_window(train, starts, ends, max_len + 1)
        else:
            self.sequence = left_pad(train, max_len + 1)


#: Negatives given as they are, or as a function that draws them on first use.
Negatives = Union[Tensor, Callable[[], Tensor]]


class RankingQueries(TensorExamples):
    """One query per user: rank the held-out ``target`` item given the ``history``.

    User u's history is ``items[starts[u]:ends[u]]`` and the target ``items[ends[u]]``.

    Items of a batch: ``history`` (max_len,) the last items, left-padded; ``target`` () the
    held-out item; ``seen`` (S,) every history item (right-padded with 0 to the longest
    history, S), which full ranking excludes from the candidates; ``negatives`` (K,) items
    the user never interacted with, for the sampled protocol; ``user`` () the user's index.

    ``seen`` is kept as the flat ranges and padded per batch (a dense (U, S) table would
    take users x longest history). ``negatives`` may be a function: it is called on the
    first access (a batch, or the attribute), so that a data module can be set up, and
    checked against the model, before they are drawn.
    """

    fields = ("history", "target", "seen", "negatives", "user")

    def __init__(self, items: Tensor, starts: Tensor, ends: Tensor, max_len: int, negatives: Negatives) -> None:
        self.items, self.starts, self.ends = items, starts, ends
        self.history = left_window(items, starts, ends, max_len)
        self.target = items[ends] if len(ends) else torch.zeros(0, dtype=torch.long)
        self.user = torch.arange(len(self.target))
        self.width = max(1, int((ends - starts).max()) if len(ends) else 1)
        self._negatives = negatives if isinstance(negatives, Tensor) else None
        self._draw = None if isinstance(negatives, Tensor) else negatives
        self._device: Optional[torch.device] = None

    @property
    def negatives(self) -> Tensor:
        """(U, K): the negatives, drawn (by the data module's function) on first access."""
        if self._negatives is None:
            self._negatives = self._draw()
        if self._device is not None and self._negatives.device != self._device:
            self._negatives = self._negatives.to(self._device)
        return self._negatives

    @property
    def seen(self) -> Tensor:
        """(U, S): every user's history items, right-padded with 0 (for inspection; batches
        pad only their own users)."""
        return self.seen_rows(torch.arange(len(self), device=self.history.device))

    def seen_rows(self, index: Tensor) -> Tensor:
        """(B, S) history items of the users ``index``, right-padded with 0."""
        starts, ends = self.starts.index_select(0, index), self.ends.index_select(0, index)
        position = starts.unsqueeze(1) + torch.arange(self.width, device=index.device)
        inside = position < ends.unsqueeze(1)
        if not len(self.items):
            return torch.zeros(len(index), self.width, dtype=torch.long, device=index.device)
        return torch.where(inside, self.items[position.clamp(max=len(self.items) - 1)], 0)

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        return {name: value[0] for name, value in self.__getitems__([i]).items()}

    def __getitems__(self, indices: Sequence[int]) -> Batch:
        index = torch.as_tensor(indices, dtype=torch.long, device=self.history.device)
        return Batch(
            history=self.history.index_select(0, index),
            target=self.target.index_select(0, index),
            seen=self.seen_rows(index),
            negatives=self.negatives.index_select(0, index),
            user=self.user.index_select(0, index),
        )

    def to(self, device: Union[torch.device, str]) -> RankingQueries:
        """Move every tensor to ``device``, in place (negatives not drawn yet follow when drawn)."""
        for name in ("items", "starts", "ends", "history", "target", "user"):
            setattr(self, name, getattr(self, name).to(device))
        self._device = torch.device(device)
        if self._negatives is not None:
            self._negatives = self._negatives.to(device)
        return self
