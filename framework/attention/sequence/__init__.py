"""Sequence attention blocks: multi-head and local self-attention, Luong's local-p, attention
pooling, hierarchical attention, co-attention and rotatory attention (importing registers them)."""

from .co_attention import AlternatingCoAttention, ParallelCoAttention
from .hierarchical import HierarchicalAttention
from .local import LocalAttention, LuongLocalAttention, band_mask
from .pooling import AttentionPooling, frobenius_penalty
from .rotatory import RotatoryAttention
from .self_attention import MultiHeadSelfAttention

__all__ = [
    "AlternatingCoAttention",
    "AttentionPooling",
    "HierarchicalAttention",
    "LocalAttention",
    "LuongLocalAttention",
    "MultiHeadSelfAttention",
    "ParallelCoAttention",
    "RotatoryAttention",
    "band_mask",
    "frobenius_penalty",
]
