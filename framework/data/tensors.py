"""Data sets held as tensors, batched by indexing and movable to the training device.

A generated data set (associative recall, stories, user histories, audio events) is a few
tensors with the example axis first. Serving it example by example costs one Python call
and one small tensor per field and example, then a stack per field: about as long as a
whole training step of a small model. :class:`TensorExamples` gathers a batch with one
``index_select`` per field (PyTorch's ``__getitems__`` protocol), and can move itself to
the GPU, so that a batch is made where the model runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torch.utils.data import Dataset
from torch.utils.data._utils.collate import default_collate


class Batch(dict):
    """A batch that a data set gathered at once (field name -> (B, ...) tensor): no collation left to do."""


def collate(items: Any) -> Any:
    """``default_collate`` for a list of examples; a :class:`Batch` passes through as a plain dict."""
    return dict(items) if isinstance(items, Batch) else default_collate(items)


class TensorExamples(Dataset):
    """Examples whose fields are tensors indexed by example along their first axis.

    Made from named tensors (``TensorExamples(tokens=..., target=...)``), or by a subclass that
    stores each field as an attribute and names them in ``fields``; example i is
    ``{name: field[i]}``, and a batch of examples is gathered by one ``index_select`` per
    field. :meth:`to` moves every field (the data module does it when training on a GPU
    without loader workers).

    Shapes: every field (M, ...), M examples.
    """

    fields: tuple[str, ...] = ()

    def __init__(self, **fields: Tensor) -> None:
        """``TensorExamples(features=..., target=...)``: the named tensors are the fields (a subclass
        may set its fields as attributes itself and name them in ``fields``)."""
        lengths = {name: len(value) for name, value in fields.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"TensorExamples: every field needs one entry per example, got lengths {lengths}")
        for name, value in fields.items():
            setattr(self, name, value)
        if fields:
            self.fields = tuple(fields)

    def __len__(self) -> int:
        return len(getattr(self, self.fields[0]))

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        return {name: getattr(self, name)[i] for name in self.fields}

    def __getitems__(self, indices: Sequence[int]) -> Batch:
        first = getattr(self, self.fields[0])
        index = torch.as_tensor(indices, dtype=torch.long, device=first.device)
        return Batch({name: getattr(self, name).index_select(0, index) for name in self.fields})

    @property
    def device(self) -> torch.device:
        return getattr(self, self.fields[0]).device

    def to(self, device: torch.device | str) -> TensorExamples:
        """Move every field to ``device``, in place; returns the data set."""
        for name in self.fields:
            setattr(self, name, getattr(self, name).to(device))
        return self
