"""The attention block library: pure ``nn.Module``s over tensors, organised like the surveys.

Public API, in the style of timm::

    from framework import attention
    attention.available()                 # every registered name
    block = attention.create("cbam", 64)  # first argument: the width
    with attention.capture(model) as maps: model(x)

Sub-packages follow the taxonomy of Brauwers & Frasincar (2021): ``general`` (score and
distribution functions composed by one ``Attention``), ``sequence`` blocks, ``feature_map``
blocks for (B, C, H, W) maps, and the ``graph`` and ``memory`` modules.
"""

from . import feature_map, general, graph, memory, sequence  # noqa: F401  (register every block)
from .base import AttentionBlock, ShapeError, expect_shape
from .capture import capture
from .general import Attention, AttentionOutput
from .registry import KINDS, BlockInfo, UnknownBlockError, available, create, info
from .spec import (
    BlockSpec,
    CrossBlock,
    FeatureMapBlock,
    GraphBlock,
    MemoryBlock,
    NoAttention,
    PoolingBlock,
    SequenceBlock,
    build,
)

__all__ = [
    "KINDS",
    "Attention",
    "AttentionBlock",
    "AttentionOutput",
    "BlockInfo",
    "BlockSpec",
    "CrossBlock",
    "FeatureMapBlock",
    "GraphBlock",
    "MemoryBlock",
    "NoAttention",
    "PoolingBlock",
    "SequenceBlock",
    "ShapeError",
    "UnknownBlockError",
    "available",
    "build",
    "capture",
    "create",
    "expect_shape",
    "info",
]
