"""Co-attention over two inputs (Lu, Yang, Batra & Parikh, NeurIPS 2016): parallel
(affinity matrix) and alternating (each input's summary guides the other's attention)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock
from ..pooling.pooling import AttentionPooling
from ..registry import register
from .attention import Attention
from .distribution import Softmax
from .score import GeneralScore

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt

PAPER = "Lu, Yang, Batra & Parikh, Hierarchical Question-Image Co-Attention for VQA, NeurIPS 2016"


class _CoAttention(AttentionBlock):
    def _check(self, x1: Tensor, x2: Tensor, mask1: Optional[Tensor], mask2: Optional[Tensor]) -> None:
        self.expect("x1", x1, "B N1 D1", D1=self.dim1)
        self.expect("x2", x2, "B N2 D2", B=x1.shape[0], D2=self.dim2)
        if mask1 is not None:
            self.expect("mask1", mask1, "B N1", B=x1.shape[0], N1=x1.shape[1])
        if mask2 is not None:
            self.expect("mask2", mask2, "B N2", B=x2.shape[0], N2=x2.shape[1])


@register(
    "parallel_co_attention",
    kind="cross",
    category="feature-related / multiplicity: parallel co-attention",
    paper=PAPER,
    form="co-attention",
)
class ParallelCoAttention(_CoAttention):
    """Parallel co-attention: an affinity matrix carries each input into the other's space.

    ::

        A   = tanh(X1 W_A X2^T)                              (B, N1, N2)
        a_1 = softmax(w_1^T tanh(X1 W_1 + A (X2 W_2)))       (B, N1)
        a_2 = softmax(w_2^T tanh(X2 W_2 + A^T (X1 W_1)))     (B, N2)
        c_1 = a_1 X1,   c_2 = a_2 X2

    A is the library's general score of X1 against X2, and padded positions are zeroed in
    A, so they reach neither product.

    Args:
        dim1: features D1 of the first input (e.g. image regions).
        dim2: features D2 of the second input (default ``dim1``; e.g. question words).
        hidden: d_w (default ``dim1``).

    Shapes:
        x1 (B, N1, D1), x2 (B, N2, D2); ``mask1`` (B, N1), ``mask2`` (B, N2) boolean,
        True = may attend. Output ``(c1 (B, D1), c2 (B, D2))``; an input without
        positions gives zeros.

    Captured weights: ``(A (B, N1, N2), a_1 (B, N1), a_2 (B, N2))`` per call.
    """

    def __init__(
        self, dim1: PositiveInt, dim2: Optional[PositiveInt] = None, hidden: Optional[PositiveInt] = None
    ) -> None:
        super().__init__()
        self.dim1, self.dim2 = dim1, dim2 or dim1
        hidden = hidden or dim1
        self.affinity = GeneralScore(self.dim1, self.dim2)  # W_A
        self.proj1, self.proj2 = nn.Linear(self.dim1, hidden, bias=False), nn.Linear(self.dim2, hidden, bias=False)
        self.score1, self.score2 = nn.Linear(hidden, 1, bias=False), nn.Linear(hidden, 1, bias=False)
        self.distribution = Softmax()

    def forward(
        self, x1: Tensor, x2: Tensor, mask1: Optional[Tensor] = None, mask2: Optional[Tensor] = None
    ) -> tuple[Tensor, Tensor]:
        self._check(x1, x2, mask1, mask2)
        mask1 = None if mask1 is None else mask1.bool()
        mask2 = None if mask2 is None else mask2.bool()
        affinity = torch.tanh(self.affinity(x1.unsqueeze(1), x2.unsqueeze(1)).squeeze(1))
        if mask1 is not None:
            affinity = affinity * mask1.unsqueeze(-1)
        if mask2 is not None:
            affinity = affinity * mask2.unsqueeze(-2)
        k1, k2 = self.proj1(x1), self.proj2(x2)
        a1, _ = self.distribution(self.score1(torch.tanh(k1 + affinity @ k2)).squeeze(-1), mask1)
        a2, _ = self.distribution(self.score2(torch.tanh(k2 + affinity.transpose(1, 2) @ k1)).squeeze(-1), mask2)
        a1, a2 = self.ablate(a1, mask1), self.ablate(a2, mask2)
        c1, c2 = (a1.unsqueeze(1) @ x1).squeeze(1), (a2.unsqueeze(1) @ x2).squeeze(1)
        return self.finish((c1, c2), (affinity, a1, a2) if self.wants_weights() else None)


@register(
    "alternating_co_attention",
    kind="cross",
    category="feature-related / multiplicity: alternating co-attention",
    paper=PAPER,
    form="co-attention",
)
class AlternatingCoAttention(_CoAttention):
    """Alternating co-attention: summarise X1, attend X2 with it, then attend X1 with that.

    ::

        s   = attend(X1, -),    e_l = w_0^T tanh(W_0 x1_l + b_0)                  (self-attentive)
        c_2 = attend(X2, s),    e_l = w_2^T tanh(W_2 x2_l + U_2 s + b_2)           (additive)
        c_1 = attend(X1, c_2),  e_l = w_1^T tanh(W_1 x1_l + U_1 c_2 + b_1)
        attend(X, g) = sum_l softmax(e)_l x_l

    The first step is an :class:`AttentionPooling`, the other two are additive-score
    :class:`~framework.attention.Attention` blocks (``summary``, ``attend2``, ``attend1``),
    each with its own parameters.

    Args:
        dim1: features D1 of the first input (summarised first, e.g. the question).
        dim2: features D2 of the second input (default ``dim1``).
        hidden: d_w of the three scores (default: the larger input width).

    Shapes:
        x1 (B, N1, D1), x2 (B, N2, D2); ``mask1`` (B, N1), ``mask2`` (B, N2) boolean,
        True = may attend. Output ``(c1 (B, D1), c2 (B, D2))``.

    Captured weights: ``(s weights (B, N1), c_2 weights (B, N2), c_1 weights (B, N1))`` per call.
    """

    def __init__(
        self, dim1: PositiveInt, dim2: Optional[PositiveInt] = None, hidden: Optional[PositiveInt] = None
    ) -> None:
        super().__init__()
        self.dim1, self.dim2 = dim1, dim2 or dim1
        hidden = hidden or max(self.dim1, self.dim2)
        self.summary = AttentionPooling(self.dim1, hidden)
        self.attend2 = Attention(self.dim1, self.dim2, score="additive", project=False, score_kwargs={"hidden": hidden})
        self.attend1 = Attention(self.dim2, self.dim1, score="additive", project=False, score_kwargs={"hidden": hidden})

    def forward(
        self, x1: Tensor, x2: Tensor, mask1: Optional[Tensor] = None, mask2: Optional[Tensor] = None
    ) -> tuple[Tensor, Tensor]:
        self._check(x1, x2, mask1, mask2)
        want = self.wants_weights()
        s = self.summary(x1, mask1, need_weights=want)
        c2 = self.attend2(s.output if want else s, x2, key_padding_mask=mask2, need_weights=want)
        c1 = self.attend1(c2.output if want else c2, x1, key_padding_mask=mask1, need_weights=want)
        if not want:
            return c1, c2
        return self.finish((c1.output, c2.output), (s.weights[:, 0], c2.weights[:, 0], c1.weights[:, 0]))
