"""Attention pooling: a sequence summarised by attention, (B, N, D) -> (B, D) (kind ``pooling``):
self-attentive pooling with learned queries and hierarchical attention. Importing registers them."""

from .hierarchical import HierarchicalAttention
from .pooling import AttentionPooling, frobenius_penalty

__all__ = ["AttentionPooling", "HierarchicalAttention", "frobenius_penalty"]
