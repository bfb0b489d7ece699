"""The Set Transformer's encoder blocks: set attention (SAB) and induced set attention (ISAB),
both made of the multihead attention block ``mab`` (Lee et al., ICML 2019)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..cross.set_attention import SET_TRANSFORMER, MultiheadAttentionBlock
from ..masks import sequence_mask
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt


@register("sab", kind="sequence", category="set / set attention block (Set Transformer)", paper=SET_TRANSFORMER)
class SetAttentionBlock(MultiheadAttentionBlock):
    """Set Transformer's SAB: every element of a set attends to the whole set, O(N^2).

    ::

        SAB(X) = MAB(X, X) = LN(H + rFF(H)),   H = LN(X + Multihead(X, X, X))

    Permutation-equivariant; see :class:`~framework.attention.cross.set_attention.MultiheadAttentionBlock`.

    Args:
        dim: element features D.
        num_heads: h.
        hidden: width of rFF (default ``dim``).
        layer_norm: the two LN of MAB.
        dropout: dropout on the attention weights while training.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real element (padding is not attended;
        its own rows are computed and meaningless). Output (B, N, D); with ``need_weights=True``
        ``AttentionOutput(output, weights (B, h, N, N))``.

    Captured weights: the (B, h, N, N) weights of each call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        num_heads: PositiveInt = 4,
        hidden: Optional[PositiveInt] = None,
        layer_norm: bool = True,
        dropout: Fraction = 0.0,
    ) -> None:
        super().__init__(dim, num_heads=num_heads, hidden=hidden, layer_norm=layer_norm, dropout=dropout)

    def forward(
        self,
        x: Tensor,
        mask: Optional[Tensor] = None,
        *,  # type: ignore[override]
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        sequence_mask(self, x, mask)  # the checks: the mask is the keys' padding of MAB(X, X)
        return super().forward(x, x, mask, need_weights=need_weights)


@register(
    "isab", kind="sequence", category="set / induced set attention block (Set Transformer)", paper=SET_TRANSFORMER
)
class InducedSetAttentionBlock(AttentionBlock):
    """Set Transformer's ISAB: the set attends to itself through m learned inducing points, O(N m).

    ::

        H          = MAB(I, X)     (B, m, D): the m inducing points I (learned) summarise the set
        ISAB_m(X)  = MAB(X, H)     (B, N, D): every element reads the summary

    Permutation-equivariant, and linear in the set size N (SAB is quadratic). The two MABs
    are ``induce`` and ``read`` (:class:`~framework.attention.cross.set_attention.MultiheadAttentionBlock`).

    Args:
        dim: element features D.
        num_inducing: m.
        num_heads: h.
        hidden: width of the rFF of both MABs (default ``dim``).
        layer_norm: the LN of both MABs.
        dropout: dropout on the attention weights while training.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real element (the inducing points
        attend to the real elements only). Output (B, N, D); with ``need_weights=True``
        ``AttentionOutput(output, (inducing weights (B, h, m, N), element weights (B, h, N, m)))``.

    Captured weights: the tuple ``(inducing weights (B, h, m, N), element weights (B, h, N, m))``
    of each call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        num_inducing: PositiveInt = 16,
        num_heads: PositiveInt = 4,
        hidden: Optional[PositiveInt] = None,
        layer_norm: bool = True,
        dropout: Fraction = 0.0,
    ) -> None:
        super().__init__()
        if num_inducing < 1:
            raise ValueError(f"isab: num_inducing must be at least 1, got {num_inducing}")
        self.dim = dim
        self.inducing = nn.Parameter(torch.empty(num_inducing, dim))
        nn.init.xavier_uniform_(self.inducing)
        options = dict(num_heads=num_heads, hidden=hidden, layer_norm=layer_norm, dropout=dropout)
        self.induce = MultiheadAttentionBlock(dim, **options)
        self.read = MultiheadAttentionBlock(dim, **options)
        self.induce.query_positions = self.read.key_positions = False  # the inducing points are no elements

    def forward(
        self, x: Tensor, mask: Optional[Tensor] = None, *, need_weights: bool = False
    ) -> Tensor | AttentionOutput:
        sequence_mask(self, x, mask)  # the checks: the mask is the keys' padding of MAB(I, X)
        want = self.wants_weights(need_weights)
        summary = self.induce(self.inducing.expand(x.shape[0], -1, -1), x, mask, need_weights=want)
        out = self.read(x, summary.output if want else summary, need_weights=want)
        if not want:
            return out
        return self.finish(out.output, (summary.weights, out.weights), need_weights)
