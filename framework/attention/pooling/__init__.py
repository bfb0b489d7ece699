"""Attention pooling: a sequence summarised by attention, (B, N, D) -> (B, D) (kind ``pooling``):
self-attentive pooling with learned queries and hierarchical attention. Importing registers them."""

from .hierarchical import HierarchicalAttention
from .pooling import AttentionPooling, frobenius_penalty
from .set_pooling import PoolingByMultiheadAttention

__all__ = ["AttentionPooling", "HierarchicalAttention", "PoolingByMultiheadAttention", "frobenius_penalty"]
