"""Modern Hopfield networks as attention (Ramsauer et al., Hopfield Networks is All You Need, ICLR 2021).

A continuous Hopfield network stores patterns x_1 .. x_N (the columns of X) and moves a state
pattern xi towards them by its update rule, which minimises the energy
E(xi) = -lse(beta, X^T xi) + xi^T xi / 2 + const and retrieves a well separated pattern in one
step; with learned maps into an associative space it is the attention of a Transformer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

from torch import Tensor

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveFloat, PositiveInt


@register(
    "hopfield",
    kind="memory",
    category="memory / associative memory (modern Hopfield network)",
    paper="Ramsauer et al., Hopfield Networks is All You Need, ICLR 2021",
)
class HopfieldLayer(Attention):
    """Modern Hopfield layer: state patterns retrieve stored patterns by the Hopfield update rule.

    The update rule of the modern Hopfield network (Ramsauer et al., eq. 3), for stored
    patterns X = (x_1 .. x_N) and a state pattern xi::

        xi_new = X softmax(beta X^T xi)

    The layer (their eq. 10, "Hopfield") runs it in an associative space, per head::

        xi^0 = W_Q r,     K = W_K Y,     V = W_V Y           (r: a state pattern, Y: the stored ones)
        xi^t = K softmax(beta K^T xi^{t-1})                   t = 1 .. S - 1  (updates in the space)
        z    = W_O [V softmax(beta K^T xi^{S-1})]_{heads}      the S-th update reads the values

    softmax runs over the valid stored patterns. With S = 1 and beta = 1 / sqrt(d_head) it is
    the attention of a Transformer (§3); ``project=False`` drops W_Q, W_K, W_V and W_O, so
    K = V = Y and z = xi^S is the plain retrieval of the network. V is W_V Y, as in the
    authors' ``hflayers`` package (the paper writes Y W_K W_V). Every update is a pass of the
    general :class:`~framework.attention.Attention` (dot score on beta * xi), so without
    weights it runs on the fused ``scaled_dot_product_attention``.

    Args:
        dim: features D of the state patterns.
        stored_dim: features of the stored patterns (default ``dim``).
        num_heads: h heads, each with its own associative space of ``head_dim`` features.
        head_dim: features per head (default ``dim // num_heads``).
        beta: the inverse temperature (default 1 / sqrt(d_head), d_head = D / h without projections).
        steps: S >= 1, the updates of each state pattern (the last one reads the values).
        project: learn W_Q, W_K, W_V, W_O (else the raw patterns, which need ``stored_dim == dim``).
        dropout: dropout on the retrieval weights while training.

    Shapes:
        query (B, M, D) state patterns, or (B, D) for one; stored (B, N, D_y); ``mask`` (B, N)
        boolean, True = a real stored pattern. Output (B, M, D), or (B, D); a state without a
        stored pattern left reads zeros. With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, h, M, N))`` of the last update (M dropped for one query).

    Captured weights: the (B, h, M, N) weights of every update, S records per call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        stored_dim: Optional[PositiveInt] = None,
        *,
        num_heads: PositiveInt = 1,
        head_dim: Optional[PositiveInt] = None,
        beta: Optional[PositiveFloat] = None,
        steps: PositiveInt = 1,
        project: bool = True,
        dropout: Fraction = 0.0,
    ) -> None:
        super().__init__(
            dim, stored_dim, score="dot", num_heads=num_heads, head_dim=head_dim, project=project, dropout=dropout
        )
        if steps < 1:
            raise ValueError(f"hopfield: steps must be at least 1, got {steps}")
        if beta is not None and beta <= 0:
            raise ValueError(f"hopfield: beta must be positive, got {beta}")
        self.steps = steps
        self.beta = beta if beta is not None else 1.0 / math.sqrt(self.score.key_dim)

    def forward(
        self,
        query: Tensor,
        stored: Tensor,
        mask: Optional[Tensor] = None,
        *,  # type: ignore[override]
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        single = query.dim() == 2
        if single:
            query = query.unsqueeze(1)
        self.expect("query", query, "B M D", D=self.dim)
        self.expect("stored", stored, "B N D", B=query.shape[0], D=self.key_dim)
        if mask is not None:
            self.expect("mask", mask, "B N", B=query.shape[0], N=stored.shape[1])
        want = self.wants_weights(need_weights)
        keys = self._split(self.k_proj(stored))
        xi = self._split(self.q_proj(query))
        for _ in range(self.steps - 1):  # xi <- K softmax(beta K^T xi): the keys are the values
            xi, _, _ = self._attend(self.beta * xi, keys, keys, mask, None, want)
        context, weights, _ = self._attend(self.beta * xi, keys, self._split(self.v_proj(stored)), mask, None, want)
        out = self.out_proj(context.transpose(1, 2).flatten(2))
        if single:
            out = out.squeeze(1)
            weights = None if weights is None else weights[:, :, 0]
        return self.finish(out, weights, need_weights, recorded=True)  # _attend recorded each update
