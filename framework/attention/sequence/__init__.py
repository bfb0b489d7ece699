"""Sequence attention: the tokens of a sequence attend to each other, (B, N, D) -> (B, N, D)
(kind ``sequence``): multi-head and local (windowed) self-attention. Importing registers them."""

from .local import LocalAttention, band_mask
from .self_attention import MultiHeadSelfAttention

__all__ = ["LocalAttention", "MultiHeadSelfAttention", "band_mask"]
