"""Capsule-based attention (Wang, Sun, Han, Liu & Zhu, WWW 2018): one capsule per class, each
with its own learned query, a probability module and a reconstruction."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


def capsule_losses(
    probabilities: Tensor, reconstructions: Tensor, summary: Tensor, target: Tensor
) -> tuple[Tensor, Tensor]:
    """The two hinge terms of the capsules' joint loss, batch means (Wang et al., 2018)::

        J = max(0, 1 - p_y + sum_{c != y} p_c)                         probability
        U = max(0, 1 - fbar . r_y + sum_{c != y} fbar . r_c)           reconstruction

    ``fbar`` is the unweighted average of the features the capsules attended: the capsule of
    the true class must reconstruct it, the others not.

    Shapes: probabilities (B, C), reconstructions (B, C, D), summary (B, D), target (B,) long
    -> (J, U), two scalars.
    """
    sign = 1.0 - 2.0 * nn.functional.one_hot(target, probabilities.shape[-1]).to(
        probabilities.dtype
    )  # -1 at y, +1 elsewhere
    agreement = (reconstructions @ summary.unsqueeze(-1)).squeeze(-1)  # fbar . r_c, (B, C)
    probability = (1 + (sign * probabilities).sum(-1)).clamp(min=0).mean()
    reconstruction = (1 + (sign * agreement).sum(-1)).clamp(min=0).mean()
    return probability, reconstruction


@register(
    "capsule",
    kind="pooling",
    category="query-related / multiplicity: capsule-based",
    paper="Wang, Sun, Han, Liu & Zhu, Sentiment Analysis by Capsules, WWW 2018",
    form="class capsules",
)
class CapsuleAttention(Attention):
    """Capsule-based attention: one capsule per class attends the sequence with its own query and scores its read-out.

    ::

        e_{c,l} = q_c^T x_l,   a_c = softmax_l(e_c),   v_c = sum_l a_{c,l} x_l      attention module  (B, C, D)
        p_c = sigmoid(w_c^T v_c + b_c)                                             probability module (B, C)
        r_c = p_c v_c                                                              reconstruction     (B, C, D)

    The attention module is the general :class:`~framework.attention.Attention` with a dot
    score, queried by the C learned vectors q_c (so the fused kernel runs when no weights
    are wanted). The class is the capsule with the highest p_c; :func:`capsule_losses` gives
    the joint loss's terms, in which the reconstruction r_y of the true class must agree with
    the average of the features and the others must not.

    Args:
        dim: features D of the sequence.
        num_capsules: C, one per class.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real position. Output
        ``(p (B, C), r (B, C, D))``; with ``need_weights=True`` an
        ``AttentionOutput((p, r), weights (B, C, N))``.

    Captured weights: the (B, C, N) weights a_c of each call.
    """

    def __init__(self, dim: PositiveInt, num_capsules: PositiveInt = 2) -> None:
        if num_capsules < 1:
            raise ValueError(f"capsule: num_capsules must be at least 1, got {num_capsules}")
        super().__init__(dim, score="dot", project=False)
        self.gives_probe_rows = False  # learned queries, no query grid: a capture keeps the whole weights
        self.num_capsules = num_capsules
        self.queries = nn.Parameter(torch.randn(num_capsules, dim) / dim**0.5)  # q_c
        self.probability = nn.Parameter(torch.randn(num_capsules, dim) / dim**0.5)  # w_c
        self.probability_bias = nn.Parameter(torch.zeros(num_capsules))  # b_c

    def record(self, weights: Tensor, *, queries: object = None, keys: object = None) -> None:
        super().record(weights[:, 0], keys=keys)  # Attention's (B, 1, C, N) without the head axis; learned queries

    def forward(
        self, x: Tensor, mask: Optional[Tensor] = None, *, need_weights: bool = False
    ) -> tuple[Tensor, Tensor] | AttentionOutput:  # type: ignore[override]
        self.expect("x", x, "B N D", D=self.dim)
        if mask is not None:
            self.expect("mask", mask, "B N", B=x.shape[0], N=x.shape[1])
        result = super().forward(
            self.queries.expand(x.shape[0], -1, -1), x, key_padding_mask=mask, need_weights=need_weights
        )
        capsules = result.output if need_weights else result  # v (B, C, D)
        p = torch.sigmoid((capsules * self.probability).sum(-1) + self.probability_bias)
        out = (p, p.unsqueeze(-1) * capsules)
        return self.finish(out, result.weights[:, 0] if need_weights else None, need_weights, recorded=True)
