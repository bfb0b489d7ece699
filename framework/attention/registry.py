"""The block registry: short names -> block classes, with the catalogue's metadata.

Every block module registers its classes with :func:`register` when
``framework.attention`` is imported (the package imports all of them), so the
registry is complete before any name is looked up.

A block may have aliases, the names other libraries give it (timm's ``nl`` for ``non_local``);
they are looked up like its name and suggested for near misses. Feature-map blocks also take
timm's names for the width of their bottleneck (:func:`timm_arguments`).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

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


#: The forms of block that call or give back otherwise than their kind says (:data:`KINDS`): a block
#: of one of them names it when registered, and a model's slot takes it only where the model names the
#: form (:func:`framework.attention.build`'s ``forms``); any other slot refuses it when the model is built.
FORMS: dict[str, str] = {
    "co-attention": "two sequences attend each other: (x1 (B, M, D1), x2 (B, N, D2), mask1, mask2) -> two summaries",
    "aspect triple": "left, target and right contexts (B, L, D), (B, T, D), (B, R, D) -> (B, D)",
    "words and characters": "a query over words (B, N, D) and their characters (B, N, C, D) -> (B, D)",
    "pointer": "query (B, M, Dq) over keys (B, N, Dk) -> a distribution over the keys (B, M, N), no read-out",
    "copy": "decoder features, attention weights, source tokens and vocabulary logits -> mixed logits",
    "set block": "queries (B, M, D) and keys (B, N, Dk), both 3-d -> (B, M, D), residual over the queries",
    "class capsules": "(B, N, D) -> per class a probability (B, C) and a reconstruction (B, C, D)",
    "sentences": "words of sentences (B, S, W, D) -> (B, D)",
    "embedding sets": "E embeddings of the same tokens, (B, N, D_e) each -> (B, N, D)",
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
    aliases: tuple[str, ...] = ()  # other libraries' names for it
    form: Optional[str] = None  # one of FORMS where it calls or gives back otherwise than its kind says

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
_ALIASES: dict[str, str] = {}  # alias -> registered name


def register(
    name: str,
    *,
    kind: str,
    category: str,
    paper: str,
    placement: Optional[str] = None,
    aliases: tuple[str, ...] = (),
    form: Optional[str] = None,
    **defaults: Any,
) -> Callable:
    """Class decorator: register ``cls`` under ``name``.

    ``defaults`` are keyword arguments baked into this entry, so one class can
    serve several catalogue entries (``additive`` is ``Attention(score="additive")``).
    A feature-map block names its ``placement`` in a CNN (:data:`PLACEMENTS`).
    ``aliases``: other names of exactly this block (timm's, for instance). ``form``: one of
    :data:`FORMS`, for a block that calls or gives back otherwise than its kind says.
    """
    if kind not in KINDS:
        raise ValueError(f"register({name!r}): kind must be one of {sorted(KINDS)}, got {kind!r}")
    if (kind == "feature_map") != (placement in PLACEMENTS):
        raise ValueError(
            f"register({name!r}): a feature_map block names its placement, one of {PLACEMENTS}; "
            f"other kinds none; got kind={kind!r}, placement={placement!r}"
        )
    if form is not None and form not in FORMS:
        raise ValueError(f"register({name!r}): form must be one of {sorted(FORMS)}, got {form!r}")

    def decorate(cls: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        for taken in (name, *aliases):
            if taken in _REGISTRY or taken in _ALIASES:
                raise ValueError(f"attention block {taken!r} is registered twice")
        _REGISTRY[name] = BlockInfo(name, cls, kind, category, paper, dict(defaults), placement, tuple(aliases), form)
        _ALIASES.update(dict.fromkeys(aliases, name))
        if not defaults:
            cls.block_name = name  # the canonical name of a class, used in messages
        return cls

    return decorate


def available(kind: str | None = None) -> list[str]:
    """Sorted names of the registered blocks, optionally of one kind."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    return sorted(n for n, info in _REGISTRY.items() if kind is None or info.kind == kind)


def aliases(kind: str | None = None) -> dict[str, str]:
    """Alias -> registered name, of the blocks of one kind or of all."""
    return {alias: name for alias, name in sorted(_ALIASES.items()) if kind is None or _REGISTRY[name].kind == kind}


def info(name: str) -> BlockInfo:
    """The catalogue entry of ``name`` (or of an alias); an unknown name lists the close ones."""
    try:
        return _REGISTRY[_ALIASES.get(name, name)]
    except KeyError:
        raise UnknownBlockError(unknown_name_message(name, available(), known=aliases())) from None


def create(name: str, *args: Any, **kwargs: Any) -> nn.Module:
    """Build the block registered as ``name`` (timm style: first argument is the width; timm's
    names accepted, see :func:`timm_arguments`).

    >>> create("cbam", 64)  # doctest: +SKIP
    """
    entry = info(name)
    if entry.kind == "feature_map":
        kwargs = timm_arguments(entry, kwargs)
    block = entry.builder(*args, **{**entry.defaults, **kwargs})
    block.block_name = entry.name  # presets share a class; the instance knows which entry it is
    return block


def timm_arguments(entry: BlockInfo, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with timm.layers' names for a feature-map block's bottleneck put as ours:
    ``rd_ratio`` (hidden features C x ratio) as ``reduction`` = 1 / ratio, a whole number (the
    blocks keep C // reduction features); ``rd_channels`` (the hidden width itself) as ``hidden``,
    or ``inner_channels`` for the blocks that call it so. ``rd_divisor`` (timm rounds the width
    to a multiple of it) has no counterpart: an error says what to give instead."""
    params = inspect.signature(entry.builder).parameters
    kwargs = dict(kwargs)
    if "rd_divisor" in kwargs and "rd_divisor" not in params:
        raise TypeError(
            f"{entry.name}: rd_divisor (timm's rounding of the bottleneck width to a multiple) has no "
            "counterpart here; give rd_channels, the width itself"
        )
    for timm_name, ours in (("rd_ratio", ("reduction",)), ("rd_channels", ("hidden", "inner_channels"))):
        target = next((p for p in ours if p in params), None)
        if timm_name not in kwargs or timm_name in params or target is None:
            continue
        if target in kwargs:
            raise TypeError(f"{entry.name}: give {timm_name} (timm's name) or {target}, not both")
        value = kwargs.pop(timm_name)
        if timm_name == "rd_ratio":
            reduction = round(1 / value) if value > 0 else 0
            if reduction < 1 or abs(reduction * value - 1) > 1e-6:
                raise ValueError(
                    f"{entry.name}: rd_ratio must be 1 / a whole number (the block keeps C // reduction "
                    f"hidden features), got {value}; give rd_channels for another width"
                )
            value = reduction
        kwargs[target] = value
    return kwargs


def unknown_name_message(
    name: str, names: list[str], what: str = "attention block", known: Optional[dict[str, str]] = None
) -> str:
    """'unknown attention block 'cbma'; did you mean: cbam?' plus where to look.

    The suggestions are the names and aliases (``known``: alias -> name) within a few edits of
    ``name`` (one per three letters; a swap of two letters is one edit), nearest first; when
    none is that near, those that share most of its letters in order (``difflib``).
    """
    known = known or {}
    candidates = [*names, *known]
    edits = {c: _edits(name, c) for c in candidates}
    close = sorted((c for c in candidates if edits[c] <= max(1, len(name) // 3)), key=lambda c: (edits[c], c))[:4]
    close = close or difflib.get_close_matches(name, candidates, n=4, cutoff=0.6)
    shown = [f"{c} (= {known[c]})" if c in known else c for c in close]
    hint = f"did you mean: {', '.join(shown)}?" if close else f"available: {', '.join(names)}"
    return f"unknown {what} {name!r}; {hint} (`python -m framework blocks` lists the catalogue)"


def _edits(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) that turn ``a`` into ``b``: the
    optimal string alignment distance."""
    previous, row = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[-1]
