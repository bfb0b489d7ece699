"""The attention block library: pure ``nn.Module``s over tensors, organised like the surveys.

Public API, in the style of timm::

    from framework import attention
    attention.available()                 # every registered name
    block = attention.create("cbam", 64)  # first argument: the width
    with attention.capture(model) as maps: model(x)

One sub-package per kind of block (``registry.KINDS``): ``cross`` (the general attention
model of Brauwers & Frasincar (2021), score x distribution functions composed by one
``Attention``, and the blocks built on it), ``sequence``, ``pooling``, ``feature_map`` for
(B, C, H, W) maps, ``graph`` and ``memory``. ``base`` holds what every block shares (shape
checks, weights on demand, the ablation switch), ``masks`` the checks of a sequence block's inputs
and the one boolean mask it attends with (``sequence_mask``), ``record`` what a capture keeps of one call,
``capture`` and ``ablation`` act on a whole model, ``probes`` says which queries a capture with
probes records the exact rows of.

A block states the domain of each parameter a config can set in its annotation, with the types
of :mod:`framework.values` (``dim: PositiveInt``, ``dropout: Fraction``) and ``Literal`` choices
(``score: ScoreName``). The blocks import those types under ``TYPE_CHECKING``: the config parser
(jsonargparse) resolves them when a config names a block and refuses a value outside its domain,
while ``import framework.attention`` loads no parser. Called from Python, a block checks its
arguments itself.
"""

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

from . import cross, feature_map, graph, memory, pooling, sequence
from .ablation import ABLATIONS, ablation
from .base import AttentionBlock, AttentionOutput, ShapeError, expect_shape, weights_over_keys
from .capture import capture
from .choice import blocks_in
from .cross import Attention
from .masks import sequence_mask
from .probes import ProbeRows, probe_index
from .record import Record
from .registry import KINDS, BlockInfo, UnknownBlockError, aliases, available, create, info

if TYPE_CHECKING:
    from .spec import (
        BlockSpec,
        CrossBlock,
        FeatureMapBlock,
        GraphBlock,
        MeanPooling,
        MemoryBlock,
        NoAttention,
        PoolingBlock,
        SequenceBlock,
        build,
    )

#: What a model's config names a block with (``spec``, typed for jsonargparse): imported on first
#: use, so the library alone does not load jsonargparse.
_SPEC = (
    "BlockSpec",
    "CrossBlock",
    "FeatureMapBlock",
    "GraphBlock",
    "MeanPooling",
    "MemoryBlock",
    "NoAttention",
    "PoolingBlock",
    "SequenceBlock",
    "build",
)

for _kind in (cross, feature_map, graph, memory, pooling, sequence):  # every public module of a kind's folder registers
    for _module in pkgutil.iter_modules(_kind.__path__, f"{_kind.__name__}."):  # its blocks (_private ones are helpers)
        if not _module.name.rpartition(".")[2].startswith("_"):
            importlib.import_module(_module.name)

__all__ = [
    "ABLATIONS",
    "KINDS",
    "Attention",
    "AttentionBlock",
    "AttentionOutput",
    "BlockInfo",
    "BlockSpec",
    "CrossBlock",
    "FeatureMapBlock",
    "GraphBlock",
    "MeanPooling",
    "MemoryBlock",
    "NoAttention",
    "ProbeRows",
    "PoolingBlock",
    "Record",
    "SequenceBlock",
    "ShapeError",
    "UnknownBlockError",
    "ablation",
    "aliases",
    "available",
    "blocks_in",
    "build",
    "capture",
    "create",
    "expect_shape",
    "info",
    "probe_index",
    "sequence_mask",
    "weights_over_keys",
]


def __getattr__(name: str) -> Any:
    if name in _SPEC:
        return getattr(importlib.import_module(".spec", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
