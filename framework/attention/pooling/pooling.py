"""Self-attentive pooling: a sequence summarised by learned queries
(Yang et al., NAACL 2016; Lin et al., ICLR 2017)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


def frobenius_penalty(weights: Tensor) -> Tensor:
    """Lin et al.'s redundancy penalty, the batch mean of ||A A^T - I||_F^2 for A (B, r, N)."""
    gram = weights @ weights.transpose(-1, -2)
    identity = torch.eye(weights.shape[-2], dtype=weights.dtype, device=weights.device)
    return (gram - identity).square().sum((-2, -1)).mean()


@register(
    "pooling",
    kind="pooling",
    category="query-related / type: self-attentive (learned query)",
    paper=(
        "Yang et al., NAACL 2016 (learned context vector); Lin et al., ICLR 2017 (structured self-attentive embedding)"
    ),
)
class AttentionPooling(Attention):
    """Self-attentive pooling: r learned queries summarise the N tokens of a sequence.

    ::

        A = softmax(W_2 tanh(W_1 H^T + b))       A (r, N), W_1 (d_w, D), W_2 (r, d_w)
        M = A H                                  M (r, D)

    This is the general :class:`~framework.attention.Attention` with a dot score, whose
    keys are tanh(W_1 h_n + b), whose values are the tokens h_n, and whose r queries are
    the rows of W_2 (Yang et al.'s context vector u_w when r = 1). :func:`frobenius_penalty`
    of the weights is Lin et al.'s regulariser.

    Args:
        dim: token features D.
        hidden: d_w (default ``dim``).
        num_queries: r, the rows of the embedding matrix M.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real token. Output (B, D) when
        r = 1, else (B, r, D); a sequence without tokens gives zeros. With
        ``need_weights=True`` an ``AttentionOutput(output, weights (B, r, N))``.

    Captured weights: the (B, r, N) weights A of each call.
    """

    def __init__(self, dim: PositiveInt, hidden: Optional[PositiveInt] = None, num_queries: PositiveInt = 1) -> None:
        hidden = hidden or dim
        super().__init__(hidden, hidden, dim, score="dot", project=False)
        self.gives_probe_rows = False  # learned queries, no query grid: a capture keeps the whole weights
        self.token_dim, self.num_queries = dim, num_queries
        self.key_map = nn.Linear(dim, hidden)  # W_1, b
        self.queries = nn.Parameter(torch.randn(num_queries, hidden) / hidden**0.5)  # W_2

    def record(self, weights: Tensor, *, queries: object = None, keys: object = None) -> None:
        super().record(weights[:, 0], keys=keys)  # Attention's (B, 1, r, N) without the head axis; learned queries

    def forward(
        self, x: Tensor, mask: Optional[Tensor] = None, *, need_weights: bool = False
    ) -> Tensor | AttentionOutput:  # type: ignore[override]
        self.expect("x", x, "B N D", D=self.token_dim)
        if mask is not None:
            self.expect("mask", mask, "B N", B=x.shape[0], N=x.shape[1])
        keys = torch.tanh(self.key_map(x))
        queries = self.queries.expand(x.shape[0], -1, -1)
        result = super().forward(queries, keys, x, key_padding_mask=mask, need_weights=need_weights)
        out = result[0] if need_weights else result
        if self.num_queries == 1:
            out = out.squeeze(1)
        return self.finish(out, result.weights[:, 0] if need_weights else None, need_weights, recorded=True)
