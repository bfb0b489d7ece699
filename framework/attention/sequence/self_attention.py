"""Multi-head self-attention (Vaswani et al., NeurIPS 2017): the general model with
scaled dot-product scores, learned projections and several heads, over one sequence."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from torch import Tensor

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..masks import sequence_mask
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt


@register(
    "mhsa",
    kind="sequence",
    category="query-related / multiplicity: multi-head self-attention",
    paper="Vaswani et al., Attention Is All You Need, NeurIPS 2017",
)
class MultiHeadSelfAttention(Attention):
    """Multi-head self-attention: every token of a sequence attends to every token.

    ::

        head_j = softmax(X W_Q^j (X W_K^j)^T / sqrt(d_h)) X W_V^j,   d_h = dim / h
        out    = [head_1; ...; head_h] W_O

    The module is :class:`~framework.attention.Attention` with ``score="scaled_dot"`` and
    projections, so without weights it runs on the fused ``scaled_dot_product_attention``.

    Args:
        dim: token features D.
        num_heads: h heads (``dim`` must be divisible by it).
        dropout: dropout on the attention weights while training.
        causal: token i attends tokens j <= i only (decoder self-attention).
        bias: biases of the four projections.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real token (padded keys are
        ignored); ``attn_mask`` (N, N), (B, N, N) or (B, h, N, N), True = may attend.
        Output (B, N, D); with ``need_weights=True`` an
        ``AttentionOutput(output, weights (B, h, N, N))``. A query with no key left
        gets a zero context, so its output is the output bias.

    Captured weights: the (B, h, N, N) weights of each call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        num_heads: PositiveInt = 8,
        dropout: Fraction = 0.0,
        causal: bool = False,
        bias: bool = True,
    ) -> None:
        super().__init__(dim, score="scaled_dot", num_heads=num_heads, dropout=dropout, causal=causal, bias=bias)

    def forward(  # type: ignore[override]
        self,
        x: Tensor,
        mask: Optional[Tensor] = None,
        *,
        attn_mask: Optional[Tensor] = None,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        allowed = sequence_mask(self, x, mask, attn_mask)
        return super().forward(x, attn_mask=allowed, need_weights=need_weights)
