"""Local (windowed) attention: self-attention restricted to a band around each token
(Luong et al., EMNLP 2015, local-m; Beltagy et al., Longformer 2020, sliding window)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..masks import sequence_mask
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, NonNegativeInt, PositiveInt


@lru_cache(maxsize=32)
def band_mask(n: int, window: int, device: torch.device) -> Tensor:
    """(n, n) boolean mask, True where |i - j| <= window (built once per size).

    Built outside inference mode, so a mask first made in a validation loop can still be
    saved for backward in training.
    """
    with torch.inference_mode(False):
        index = torch.arange(n, device=device)
        return (index[:, None] - index[None, :]).abs() <= window


@register(
    "local",
    kind="sequence",
    category="general / alignment: local (window)",
    paper="Luong, Pham & Manning, EMNLP 2015 (local-m); Beltagy, Peters & Cohan, Longformer, arXiv:2004.05150, 2020",
)
class LocalAttention(Attention):
    """Sliding-window self-attention: token i attends tokens j with |i - j| <= window.

    ::

        a_ij = exp(e_ij) / sum_{|i - l| <= w} exp(e_il),  e_ij = (W_Q x_i)^T (W_K x_j) / sqrt(d_h)
        out_i = W_O [sum_j a_ij W_V x_j]   (per head, heads concatenated)

    The band (cached per length, window and device), and-ed with the padding by
    :func:`~framework.attention.sequence_mask`, is the ``attn_mask`` of the general
    :class:`~framework.attention.Attention`. With ``causal`` only j in [i - w, i] is attended.

    Args:
        dim: token features D.
        window: w, the largest distance |i - j| attended.
        num_heads: h heads.
        causal: also forbid j > i.
        dropout: dropout on the attention weights while training.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real token. Output (B, N, D); with
        ``need_weights=True`` an ``AttentionOutput(output, weights (B, h, N, N))``.

    Captured weights: the (B, h, N, N) weights of each call (zero outside the band).
    """

    def __init__(
        self,
        dim: PositiveInt,
        window: NonNegativeInt = 4,
        num_heads: PositiveInt = 1,
        causal: bool = False,
        dropout: Fraction = 0.0,
    ) -> None:
        super().__init__(dim, score="scaled_dot", num_heads=num_heads, causal=causal, dropout=dropout)
        if window < 0:
            raise ValueError(f"local: window must be >= 0, got {window}")
        self.window = window

    def forward(
        self, x: Tensor, mask: Optional[Tensor] = None, *, need_weights: bool = False
    ) -> Tensor | AttentionOutput:  # type: ignore[override]
        allowed = sequence_mask(self, x, mask, structure=lambda n, device: band_mask(n, self.window, device))
        return super().forward(x, attn_mask=allowed, need_weights=need_weights)
