"""The block registry: short names -> block classes, with the catalogue's metadata.

Every block module registers its classes with :func:`register` when
``framework.attention`` is imported (the package imports all of them), so the
registry is complete before any name is looked up.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Callable

from torch import nn

#: The kinds of block, by the tensors they take and give back.
KINDS: dict[str, str] = {
    "sequence": "(B, N, D) -> (B, N, D): tokens attend to tokens of the same sequence",
    "cross": "query (B, M, Dq) attends to keys/values (B, N, Dk): (B, M, Dv)",
    "pooling": "(B, N, D) -> (B, D): a sequence summarised by attention",
    "feature_map": "(B, C, H, W) -> (B, C, H, W): image or spectrogram feature maps",
    "graph": "node features (N, F) and edges (2, E) -> (N, F')",
    "memory": "query (B, D) reads memory slots (B, N, D): (B, D)",
}


@dataclass(frozen=True)
class BlockInfo:
    """One catalogue entry."""

    name: str
    builder: Callable[..., nn.Module]
    kind: str
    category: str
    paper: str
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        """First line of the block's docstring."""
        doc = (self.builder.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


class UnknownBlockError(ValueError):
    """Raised for a block name that is not registered; lists the close names."""


_REGISTRY: dict[str, BlockInfo] = {}


def register(name: str, *, kind: str, category: str, paper: str, **defaults: Any) -> Callable:
    """Class decorator: register ``cls`` under ``name``.

    ``defaults`` are keyword arguments baked into this entry, so one class can
    serve several catalogue entries (``additive`` is ``Attention(score="additive")``).
    """
    if kind not in KINDS:
        raise ValueError(f"register({name!r}): kind must be one of {sorted(KINDS)}, got {kind!r}")

    def decorate(cls: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        if name in _REGISTRY:
            raise ValueError(f"attention block {name!r} is registered twice")
        _REGISTRY[name] = BlockInfo(name, cls, kind, category, paper, dict(defaults))
        if not defaults:
            cls.block_name = name  # the canonical name of a class, used in messages
        return cls

    return decorate


def available(kind: str | None = None) -> list[str]:
    """Sorted names of the registered blocks, optionally of one kind."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    return sorted(n for n, info in _REGISTRY.items() if kind is None or info.kind == kind)


def info(name: str) -> BlockInfo:
    """The catalogue entry of ``name``; an unknown name lists the close ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownBlockError(unknown_name_message(name, available())) from None


def create(name: str, *args: Any, **kwargs: Any) -> nn.Module:
    """Build the block registered as ``name`` (timm style: first argument is the width).

    >>> create("cbam", 64)  # doctest: +SKIP
    """
    entry = info(name)
    block = entry.builder(*args, **{**entry.defaults, **kwargs})
    block.block_name = name  # presets share a class; the instance knows which entry it is
    return block


def unknown_name_message(name: str, names: list[str], what: str = "attention block") -> str:
    """'unknown attention block 'cbma'; did you mean: cbam?' plus where to look."""
    close = difflib.get_close_matches(name, names, n=4, cutoff=0.5)
    hint = f"did you mean: {', '.join(close)}?" if close else f"available: {', '.join(names)}"
    return f"unknown {what} {name!r}; {hint} (`python -m framework blocks` lists the catalogue)"
