"""Recording attention weights during a forward pass, for plots and logging.

Blocks compute their weights only when somebody asks: a caller passes
``need_weights=True``, or a :class:`capture` context names the block. Outside a
capture the check is one test of an empty list, so training pays nothing.

>>> with capture(model, "head.*") as maps:          # doctest: +SKIP
...     model(images)
>>> maps["head.attention"][0].shape                 # one record per call
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from fnmatch import fnmatch
from typing import Any

from torch import Tensor, nn

_ACTIVE: list[capture] = []


class capture(Mapping[str, list]):
    """Context manager that records the weights of chosen attention blocks.

    Args:
        model: the module to watch; its attention blocks are found by ``named_modules``.
        *patterns: which blocks, as glob patterns over qualified module names
            (``"encoder.layers.*.attn"``) or registry names (``"criss_cross"``).
            None given: every attention block in ``model`` (none at all is fine: a
            no-attention baseline records nothing).
        detach: store detached tensors (the default) or keep them in the graph.

    Inside the context the object is a mapping ``qualified name -> list of records``,
    one :class:`~framework.attention.base.Record` per call of the block (a block applied
    twice, like criss-cross with recurrence 2 or a multi-hop read, leaves two): its
    ``weights`` are what each block documents under "Captured weights", with the grids of
    its queries and keys where they relate positions.
    """

    def __init__(self, model: nn.Module, *patterns: str, detach: bool = True) -> None:
        blocks = {name: m for name, m in model.named_modules() if hasattr(m, "block_name")}
        chosen = {
            name: m
            for name, m in blocks.items()
            if not patterns or any(fnmatch(name, p) or p == m.block_name for p in patterns)
        }
        if patterns and not chosen:
            found = ", ".join(f"{n or '<root>'} ({m.block_name})" for n, m in blocks.items()) or "none"
            raise ValueError(f"capture: no attention block matches {list(patterns)}; blocks in the model: {found}")
        self._names = {id(m): name or m.block_name for name, m in chosen.items()}
        self._records: dict[str, list] = {}
        self.detach = detach

    def __enter__(self) -> capture:
        self._records.clear()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.remove(self)

    def __getitem__(self, name: str) -> list:
        return self._records[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)


def is_capturing(block: nn.Module) -> bool:
    """Whether an active capture wants this block's weights."""
    return bool(_ACTIVE) and any(id(block) in c._names for c in _ACTIVE)


def record(block: nn.Module, record: Any) -> None:
    """Hand a block's record to every active capture that watches it."""
    for c in _ACTIVE:
        name = c._names.get(id(block))
        if name is not None:
            c._records.setdefault(name, []).append(replace(record, weights=_detach(record.weights)) if c.detach else record)


def _detach(value: object) -> object:
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(_detach(v) for v in value)
    return value
