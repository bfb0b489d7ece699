"""The block registry: short names -> block classes, with the catalogue's metadata.

Every block module registers its classes with :func:`register` when
``framework.attention`` is imported (the package imports all of them), so the
registry is complete before any name is looked up.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

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


#: Where a feature-map block goes in a CNN: ``block``, on the residual branch of every residual
#: block (channel and spatial gates, as SE-ResNet and CBAM-ResNet place them), or ``stage``, once
#: after a stage (blocks that relate every position to every other, as the non-local paper places them).
PLACEMENTS = ("block", "stage")


@dataclass(frozen=True)
class BlockInfo:
    """One catalogue entry."""

    name: str
    builder: Callable[..., nn.Module]
    kind: str
    category: str
    paper: str
    defaults: dict[str, Any] = field(default_factory=dict)
    placement: Optional[str] = None  # feature-map blocks: one of PLACEMENTS

    @property
    def summary(self) -> str:
        """First line of the block's docstring."""
        doc = (self.builder.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""

    @property
    def source(self) -> str:
        """Where the block is defined: its file, relative to the project (``framework/attention/...``)."""
        path = Path(inspect.getfile(self.builder)).resolve()
        root = Path(__file__).resolve().parents[2]
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


class UnknownBlockError(ValueError):
    """Raised for a block name that is not registered; lists the close names."""


_REGISTRY: dict[str, BlockInfo] = {}


def register(name: str, *, kind: str, category: str, paper: str, placement: Optional[str] = None,
             **defaults: Any) -> Callable:
    """Class decorator: register ``cls`` under ``name``.

    ``defaults`` are keyword arguments baked into this entry, so one class can
    serve several catalogue entries (``additive`` is ``Attention(score="additive")``).
    A feature-map block names its ``placement`` in a CNN (:data:`PLACEMENTS`).
    """
    if kind not in KINDS:
        raise ValueError(f"register({name!r}): kind must be one of {sorted(KINDS)}, got {kind!r}")
    if (kind == "feature_map") != (placement in PLACEMENTS):
        raise ValueError(f"register({name!r}): a feature_map block names its placement, one of {PLACEMENTS}; "
                         f"other kinds none; got kind={kind!r}, placement={placement!r}")

    def decorate(cls: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        if name in _REGISTRY:
            raise ValueError(f"attention block {name!r} is registered twice")
        _REGISTRY[name] = BlockInfo(name, cls, kind, category, paper, dict(defaults), placement)
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
