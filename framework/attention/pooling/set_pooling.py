"""Pooling by multihead attention (PMA), the Set Transformer's decoder block (Lee et al., ICML 2019)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..cross.set_attention import SET_TRANSFORMER, MultiheadAttentionBlock
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt


@register(
    "pma", kind="pooling", category="set / pooling by multihead attention (Set Transformer)", paper=SET_TRANSFORMER
)
class PoolingByMultiheadAttention(AttentionBlock):
    """Set Transformer's PMA: k learned seed vectors attend to the set and summarise it.

    ::

        PMA_k(Z) = MAB(S, rFF(Z))       S (k, D) learned seeds;  rFF(z) = W_2 relu(W_1 z + b_1) + b_2

    Permutation-invariant in the elements of Z; with k > 1 the seeds give k summaries (the
    paper follows them with a SAB when they must interact, e.g. k cluster centres).
    The MAB is ``pool`` (:class:`~framework.attention.cross.set_attention.MultiheadAttentionBlock`).

    Args:
        dim: element features D.
        num_seeds: k.
        num_heads: h.
        hidden: width of both rFF (default ``dim``).
        layer_norm: the LN of the MAB.
        dropout: dropout on the attention weights while training.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real element. Output (B, D) when k = 1,
        else (B, k, D); with ``need_weights=True`` ``AttentionOutput(output, weights (B, h, k, N))``.

    Captured weights: the (B, h, k, N) weights of each call (learned queries: no query grid).
    """

    def __init__(
        self,
        dim: PositiveInt,
        num_seeds: PositiveInt = 1,
        num_heads: PositiveInt = 4,
        hidden: Optional[PositiveInt] = None,
        layer_norm: bool = True,
        dropout: Fraction = 0.0,
    ) -> None:
        super().__init__()
        if num_seeds < 1:
            raise ValueError(f"pma: num_seeds must be at least 1, got {num_seeds}")
        self.dim, self.num_seeds = dim, num_seeds
        self.seeds = nn.Parameter(torch.empty(num_seeds, dim))
        nn.init.xavier_uniform_(self.seeds)
        self.feed_forward = nn.Sequential(nn.Linear(dim, hidden or dim), nn.ReLU(), nn.Linear(hidden or dim, dim))
        self.pool = MultiheadAttentionBlock(
            dim, num_heads=num_heads, hidden=hidden, layer_norm=layer_norm, dropout=dropout
        )

    def forward(
        self, x: Tensor, mask: Optional[Tensor] = None, *, need_weights: bool = False
    ) -> Tensor | AttentionOutput:
        self.expect("x", x, "B N D", D=self.dim)
        if mask is not None:
            self.expect("mask", mask, "B N", B=x.shape[0], N=x.shape[1])
        want = self.wants_weights(need_weights)
        pooled = self.pool(self.seeds.expand(x.shape[0], -1, -1), self.feed_forward(x), mask, need_weights=want)
        out = pooled.output if want else pooled
        if self.num_seeds == 1:
            out = out.squeeze(1)
        return self.finish(out, pooled.weights if want else None, need_weights, keys=(x.shape[1],))
