"""Attention pooling: a sequence summarised by attention, (B, N, D) -> (B, D) (kind ``pooling``):
self-attentive pooling with learned queries (``pooling``), hierarchical attention over words
and sentences (``hierarchical``), capsules, one per class (``capsule``), the Set Transformer's
pooling by multi-head attention (``pma``), and a weighted mix of embeddings (``meta_embedding``).
Importing the package registers them all."""

from .capsule import CapsuleAttention, capsule_losses
from .hierarchical import HierarchicalAttention
from .meta_embedding import MetaEmbedding
from .pooling import AttentionPooling, frobenius_penalty
from .set_pooling import PoolingByMultiheadAttention

__all__ = [
    "AttentionPooling",
    "CapsuleAttention",
    "HierarchicalAttention",
    "MetaEmbedding",
    "PoolingByMultiheadAttention",
    "capsule_losses",
    "frobenius_penalty",
]
