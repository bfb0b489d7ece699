"""Sequence attention: the tokens of a sequence attend to each other, (B, N, D) -> (B, N, D)
(kind ``sequence``): multi-head and local (windowed) self-attention. Importing registers them."""

from .local import LocalAttention, band_mask
from .self_attention import MultiHeadSelfAttention
from .set_attention import InducedSetAttentionBlock, SetAttentionBlock

__all__ = ["LocalAttention", "InducedSetAttentionBlock", "MultiHeadSelfAttention", "SetAttentionBlock", "band_mask"]
