"""Co-attention whose queries are the other input's average: interactive (IAN, Ma et al.,
IJCAI 2017) and multi-grained, coarse plus fine-grained (MGAN, Fan et al., EMNLP 2018).
They sit beside the parallel and alternating co-attention of ``co_attention.py`` and take
the same inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionOutput
from ..registry import register
from .attention import Attention
from .co_attention import _CoAttention
from .distribution import Softmax
from .score import ScoreName

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


def _average(x: Tensor, mask: Optional[Tensor]) -> Tensor:
    """Mean of x (B, N, D) over the positions where mask (B, N) is True; zeros if none."""
    if mask is None:
        return x.mean(1)
    weights = mask.to(x.dtype).unsqueeze(-1)
    return (x * weights).sum(1) / weights.sum(1).clamp(min=1)


@register(
    "interactive_co_attention",
    kind="cross",
    category="feature-related / multiplicity: interactive co-attention",
    paper="Ma, Li, Zhang & Wang, Interactive Attention Networks for Aspect-Level Sentiment Classification, IJCAI 2017",
    form="co-attention",
)
class InteractiveCoAttention(_CoAttention):
    """Interactive co-attention: each input is attended with the unweighted average of the other as query.

    ::

        kbar_1 = mean_l x1_l,   kbar_2 = mean_l x2_l                  (masked averages)
        a_1 = softmax_l score_1(kbar_2, x1_l),   c_1 = sum_l a_1l x1_l
        a_2 = softmax_l score_2(kbar_1, x2_l),   c_2 = sum_l a_2l x2_l

    IAN's score is the activated general one, tanh(x_l^T W kbar + b) (the default); any
    score of the general model fits (MGAN's coarse level uses ``general``). The two
    attentions are :class:`~framework.attention.Attention` blocks without projections
    (``attend1``, ``attend2``), each with its own parameters.

    Args:
        dim1: features D1 of the first input (IAN: the context).
        dim2: features D2 of the second input (default ``dim1``; IAN: the target phrase).
        score: a score function of ``Attention`` (``activated_general``, ``general``, ``additive`` ...).
        score_kwargs: its options (``hidden``, ``activation`` ...).

    Shapes:
        x1 (B, N1, D1), x2 (B, N2, D2); ``mask1`` (B, N1), ``mask2`` (B, N2) boolean,
        True = may attend. Output ``(c1 (B, D1), c2 (B, D2))``; an input without positions
        gives zeros. With ``need_weights=True`` an ``AttentionOutput`` whose weights are the
        captured ones.

    Captured weights: ``(a_1 (B, N1), a_2 (B, N2))`` per call.
    """

    def __init__(
        self,
        dim1: PositiveInt,
        dim2: Optional[PositiveInt] = None,
        score: ScoreName = "activated_general",
        score_kwargs: Optional[dict[str, Any]] = None,
    ) -> None:
        super().__init__()
        self.dim1, self.dim2 = dim1, dim2 or dim1
        self.attend1 = Attention(self.dim2, self.dim1, score=score, project=False, score_kwargs=score_kwargs)
        self.attend2 = Attention(self.dim1, self.dim2, score=score, project=False, score_kwargs=score_kwargs)

    def forward(
        self,
        x1: Tensor,
        x2: Tensor,
        mask1: Optional[Tensor] = None,
        mask2: Optional[Tensor] = None,
        *,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor] | AttentionOutput:
        self._check(x1, x2, mask1, mask2)
        want = need_weights or self.wants_weights()
        c1 = self.attend1(_average(x2, mask2), x1, key_padding_mask=mask1, need_weights=want)
        c2 = self.attend2(_average(x1, mask1), x2, key_padding_mask=mask2, need_weights=want)
        if not want:
            return c1, c2
        return self.finish((c1.output, c2.output), (c1.weights[:, 0], c2.weights[:, 0]), need_weights)


@register(
    "multi_grained_co_attention",
    kind="cross",
    category="feature-related / multiplicity: multi-grained co-attention",
    paper="Fan, Feng & Zhao, A Multi-grained Attention Network for Aspect-Level Sentiment Classification, EMNLP 2018",
    form="co-attention",
)
class MultiGrainedCoAttention(_CoAttention):
    """Multi-grained co-attention: coarse-grained (averaged queries) and fine-grained (alignment
    matrix) attention both ways.

    Coarse-grained, an :class:`InteractiveCoAttention` with MGAN's bilinear (``general``) score::

        m_ca = sum_i softmax_i(kbar_2^T W_ca x1_i) x1_i,   m_cc = sum_j softmax_j(kbar_1^T W_cc x2_j) x2_j

    Fine-grained, from the alignment matrix of every pair (BiDAF's form)::

        U_ij = w_u^T [x1_i; x2_j; x1_i * x2_j]                               (B, N1, N2)
        m_fa = sum_i softmax_i(max_j U_ij) x1_i                              max-affinity over x2
        m_fc = mean_i sum_j softmax_j(U_ij) x2_j                             each x1_i's view of x2
        c_1 = [m_ca; m_fa],   c_2 = [m_cc; m_fc]

    MGAN concatenates the four vectors [m_ca; m_cc; m_fa; m_fc]; here they come as the two
    inputs' halves, like the other co-attention blocks. Padded positions take no part in the
    max, the softmaxes or the mean.

    Args:
        dim1: features D of both inputs (the alignment multiplies them element-wise).
        dim2: features of the second input (default and only allowed value: ``dim1``).

    Shapes:
        x1 (B, N1, D), x2 (B, N2, D); ``mask1`` (B, N1), ``mask2`` (B, N2) boolean,
        True = may attend. Output ``(c1 (B, 2D), c2 (B, 2D))``. With ``need_weights=True``
        an ``AttentionOutput`` whose weights are the captured ones.

    Captured weights: ``(coarse a_1 (B, N1), coarse a_2 (B, N2), fine a_1 (B, N1), fine
    softmax_j(U) (B, N1, N2))`` per call (the coarse pair is also captured as ``coarse``).
    """

    def __init__(self, dim1: PositiveInt, dim2: Optional[PositiveInt] = None) -> None:
        super().__init__()
        self.dim1, self.dim2 = dim1, dim2 or dim1
        if self.dim2 != self.dim1:
            raise ValueError(
                f"multi_grained_co_attention: the alignment multiplies the inputs element-wise, so their "
                f"features must match, got dim1={dim1} and dim2={dim2}"
            )
        self.coarse = InteractiveCoAttention(dim1, dim1, score="general")
        self.align = nn.Linear(3 * dim1, 1)  # w_u over [x1_i; x2_j; x1_i * x2_j] (its bias cancels in the softmaxes)
        self.distribution = Softmax()

    def alignment(self, x1: Tensor, x2: Tensor) -> Tensor:
        """U (B, N1, N2), w_u^T [x1_i; x2_j; x1_i * x2_j] + b without building the (N1 x N2 x 3D) concatenation."""
        w1, w2, w12 = self.align.weight[0].split(self.dim1)
        return (x1 @ w1).unsqueeze(-1) + (x2 @ w2).unsqueeze(-2) + (x1 * w12) @ x2.transpose(1, 2) + self.align.bias

    def forward(
        self,
        x1: Tensor,
        x2: Tensor,
        mask1: Optional[Tensor] = None,
        mask2: Optional[Tensor] = None,
        *,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor] | AttentionOutput:
        self._check(x1, x2, mask1, mask2)
        want = need_weights or self.wants_weights()
        coarse = self.coarse(x1, x2, mask1, mask2, need_weights=want)
        (m_ca, m_cc) = coarse.output if want else coarse

        u = self.alignment(x1, x2)
        valid1 = None if mask1 is None else mask1.bool()
        valid2 = None if mask2 is None else mask2.bool().unsqueeze(1)  # (B, 1, N2)
        best = u if valid2 is None else u.masked_fill(~valid2, torch.finfo(u.dtype).min)
        a_fa, _ = self.distribution(best.amax(-1), valid1)  # (B, N1)
        pairs = (
            valid2 if valid1 is None else (valid1.unsqueeze(-1) if valid2 is None else valid1.unsqueeze(-1) & valid2)
        )
        rows, _ = self.distribution(u, pairs)  # (B, N1, N2), zero rows for padded x1_i
        a_fa, rows = self.ablate(a_fa, valid1), self.ablate(rows, pairs)
        m_fa = (a_fa.unsqueeze(1) @ x1).squeeze(1)
        m_fc = _average(rows @ x2, valid1)
        output = (torch.cat([m_ca, m_fa], -1), torch.cat([m_cc, m_fc], -1))
        weights = (*coarse.weights, a_fa, rows) if want else None
        return self.finish(output, weights, need_weights)
