"""The measures of the evaluation, as plain functions of tensors (each tested against hand-computed values).

Output change (Jain & Wallace, NAACL 2019): total variation distance and Jensen-Shannon
distance between two output distributions. Rank agreement: Kendall's tau-b between an
attention distribution and an importance score over the same items. Intrinsic measures:
attention correctness (Liu, Mao, Sha & Yuille, AAAI 2017: the weight mass on the gold
items) and the alignment error rate (Och & Ney, 2003) of the hard alignment read off the
attention (each query's arg-max key).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch
from torch import Tensor


def total_variation(p: Tensor, q: Tensor) -> Tensor:
    """TVD(p, q) = 1/2 sum_k |p_k - q_k| along the last axis, in [0, 1]."""
    return 0.5 * (p - q).abs().sum(-1)


def jensen_shannon(p: Tensor, q: Tensor) -> Tensor:
    """Jensen-Shannon distance along the last axis: sqrt(JSD(p, q)) with JSD in bits, in [0, 1]
    (JSD = 1/2 KL(p || m) + 1/2 KL(q || m), m = (p + q) / 2, terms with p_k = 0 count 0)."""
    m = (p + q) / 2

    def kl(a: Tensor) -> Tensor:
        return torch.where(a > 0, a * (a.clamp(min=1e-30).log2() - m.clamp(min=1e-30).log2()), torch.zeros_like(a)).sum(
            -1
        )

    return (0.5 * kl(p) + 0.5 * kl(q)).clamp(min=0).sqrt()


class Tau(NamedTuple):
    """Kendall's tau-b of each example (NaN where undefined) and its two-sided p-value."""

    tau: Tensor
    p: Tensor


def kendall_tau(a: Tensor, b: Tensor, valid: Optional[Tensor] = None) -> Tau:
    """Kendall's tau-b between ``a`` and ``b`` (B, N) row by row over the ``valid`` items (B, N);
    NaN for a row with fewer than 2 valid items or a constant side (``scipy.stats.kendalltau``)."""
    from scipy.stats import kendalltau

    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    valid = torch.ones_like(a, dtype=torch.bool) if valid is None else valid.bool().cpu()
    taus, ps = [], []
    for x, y, keep in zip(a, b, valid):
        x, y = x[keep].numpy(), y[keep].numpy()
        if len(x) < 2 or x.min() == x.max() or y.min() == y.max():
            taus.append(math.nan)
            ps.append(math.nan)
            continue
        result = kendalltau(x, y)
        taus.append(float(result.statistic))
        ps.append(float(result.pvalue))
    return Tau(torch.tensor(taus, dtype=torch.float64), torch.tensor(ps, dtype=torch.float64))


def kendall_tau_b(a: Tensor, b: Tensor, valid: Optional[Tensor] = None, pairs_per_chunk: int = 1 << 22) -> Tensor:
    """Kendall's tau-b of every row of ``a`` and ``b`` (B, N) over its ``valid`` items (B, N), at
    once and without p-values (:func:`kendall_tau` gives them, through scipy):

        tau_b = sum_{i != j} s^a_ij s^b_ij / sqrt(sum s^a_ij^2 * sum s^b_ij^2),  s^x_ij = sign(x_i - x_j)

    over the pairs of valid items: concordant less discordant pairs, over the geometric mean of
    the pairs untied in each (scipy's tau-b). NaN where a row has a constant side or fewer than
    2 valid items. Rows are taken in chunks of at most ``pairs_per_chunk`` pairs."""
    a, b = a.detach().double(), b.detach().double()
    valid = torch.ones_like(a, dtype=torch.bool) if valid is None else valid.bool().expand_as(a)
    taus = []
    for rows in torch.split(torch.arange(len(a), device=a.device), max(1, pairs_per_chunk // max(1, a.shape[-1] ** 2))):
        both = valid[rows, :, None] & valid[rows, None, :]
        sign_a = torch.sign(a[rows, :, None] - a[rows, None, :]) * both
        sign_b = torch.sign(b[rows, :, None] - b[rows, None, :]) * both
        numerator = (sign_a * sign_b).sum((-2, -1))
        denominator = (sign_a.square().sum((-2, -1)) * sign_b.square().sum((-2, -1))).sqrt()
        taus.append(torch.where(denominator > 0, numerator / denominator.clamp(min=1), torch.nan))
    return torch.cat(taus) if taus else a.new_zeros(0)


def attention_correctness(weights: Tensor, gold: Tensor, queries: Optional[Tensor] = None) -> Tensor:
    """The weight mass on the gold keys, sum_k w_qk [k gold], for every query: weights (..., Q, K),
    gold (..., Q, K) bool (broadcastable). With ``queries`` (..., Q) bool, the mean over those
    queries (a scalar; NaN when none counts); else the per-query masses (..., Q)."""
    mass = (weights * gold.to(weights.dtype)).sum(-1)
    if queries is None:
        return mass
    keep = queries.bool().expand_as(mass)
    return mass[keep].mean() if keep.any() else torch.tensor(math.nan)


def uniform_correctness(gold: Tensor, keys: Tensor, queries: Tensor) -> Tensor:
    """The correctness of uniform attention over the valid keys (the chance level): the mean over
    the counted queries of |gold keys| / |valid keys|."""
    gold, keys = torch.broadcast_tensors(gold.bool(), keys.bool())
    share = (gold & keys).sum(-1).double() / keys.sum(-1).clamp(min=1).double()
    keep = queries.bool().expand_as(share)
    return share[keep].mean() if keep.any() else torch.tensor(math.nan)


def hard_alignment(weights: Tensor, keys: Optional[Tensor] = None) -> Tensor:
    """The hard alignment of attention weights (..., Q, K): each query linked to its arg-max key
    (among the valid ``keys``), as a (..., Q, K) bool tensor."""
    if keys is not None:
        weights = weights.masked_fill(~keys.bool().expand_as(weights), -math.inf)
    return torch.nn.functional.one_hot(weights.argmax(-1), weights.shape[-1]).bool()


class AlignmentCounts(NamedTuple):
    """What the alignment error rate sums over a corpus: |A|, |S|, |A n S|, |A n P|."""

    links: int
    sure: int
    sure_hits: int
    possible_hits: int

    def __add__(self, other: AlignmentCounts) -> AlignmentCounts:  # type: ignore[override]
        return AlignmentCounts(*(a + b for a, b in zip(self, other)))

    @property
    def aer(self) -> float:
        """AER = 1 - (|A n S| + |A n P|) / (|A| + |S|); NaN for no links at all."""
        total = self.links + self.sure
        return 1 - (self.sure_hits + self.possible_hits) / total if total else math.nan

    @property
    def precision(self) -> float:
        return self.possible_hits / self.links if self.links else math.nan

    @property
    def recall(self) -> float:
        return self.sure_hits / self.sure if self.sure else math.nan


def alignment_counts(
    alignment: Tensor, sure: Tensor, possible: Tensor, queries: Optional[Tensor] = None
) -> AlignmentCounts:
    """The counts of :class:`AlignmentCounts` for an alignment A, sure links S and possible links P
    (P includes S: every sure link is possible), all (..., Q, K) bool; only the ``queries``
    (..., Q) bool count when given."""
    a, s = alignment.bool(), sure.bool()
    p = possible.bool() | s
    if queries is not None:
        keep = queries.bool().unsqueeze(-1)
        a, s, p = a & keep, s & keep, p & keep
    return AlignmentCounts(int(a.sum()), int(s.sum()), int((a & s).sum()), int((a & p).sum()))


def alignment_error_rate(alignment: Tensor, sure: Tensor, possible: Tensor, queries: Optional[Tensor] = None) -> float:
    """Och & Ney's alignment error rate of ``alignment`` against sure and possible links (see
    :func:`alignment_counts`): 0 for an alignment inside P that covers S, 1 for one that misses P."""
    return alignment_counts(alignment, sure, possible, queries).aer
