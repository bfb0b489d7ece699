"""Statistics of attention rows, per head, from a capture's records: no N x N matrix needed.

For each row p (a query's weights over the keys it may attend, V of them) of a record::

    entropy        H(p) = -sum_k p_k log p_k
    entropy_ratio  H(p) / log V            1: uniform over the valid keys, 0: one-hot
    max_weight     max_k p_k
    top<k>_mass    the sum of the k largest p_k
    max_logit      max_k e_k, the largest energy before the normalisation (where the block has them)
    lse            log sum_k exp(e_k) of every query, where the block's kernel computes it

each averaged over the rows of the record (the probe rows of a capture with ``probes``, or a
record's rows over a key grid), per head. Rows that weigh nothing (queries with no key left)
are left out, and so are padded queries, where queries and keys are the same positions (a
query whose own position is no valid key). Rows that are not normalised (sigmoid attention)
are normalised first. The valid keys are the record's ``valid`` where the block gives them,
else the keys that some row of the example weighs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from .record import Record

#: The statistics, in the order they are reported.
NAMES = ("entropy", "entropy_ratio", "max_weight", "top_mass", "max_logit", "lse")


@dataclass(frozen=True)
class RowStatistics:
    """Per-head statistics (each (h,) float64; NaN where no row counts) of one record, and the
    rows they come from. ``top_mass`` is the mass on the ``top_k`` largest weights. ``same_key``
    is the share of an example's rows whose largest weight falls on that example's most
    frequent such key (1 when every row looks at one key), which the collapse monitor reads.
    ``rows`` (B, h, R, K), ``valid`` (B, h, R, K) and ``counted`` (B, h, R) are the rows, their
    valid keys and which of them count."""

    entropy: Tensor
    entropy_ratio: Tensor
    max_weight: Tensor
    top_mass: Tensor
    top_k: int
    max_logit: Optional[Tensor]
    lse: Optional[Tensor]
    same_key: Tensor
    rows: Tensor
    valid: Tensor
    counted: Tensor

    @property
    def heads(self) -> int:
        return len(self.entropy)

    def values(self) -> dict[str, Tensor]:
        """The reported statistics by name (``top<k>_mass`` for ``top_mass``), those the record has."""
        found = {
            "entropy": self.entropy,
            "entropy_ratio": self.entropy_ratio,
            "max_weight": self.max_weight,
            f"top{self.top_k}_mass": self.top_mass,
            "max_logit": self.max_logit,
            "lse": self.lse,
        }
        return {name: value for name, value in found.items() if value is not None}


def rows_of_record(record: Record) -> Optional[tuple[Tensor, Tensor, Optional[Tensor]]]:
    """(rows (B, h, R, K), valid (B, h, R, K) bool, logits or None) of a record whose weights
    end in an axis over its key grid; None for records that weigh no key grid (gates, graphs,
    tuples). Weights (B, K) are one row per example, (B, R, K) R rows of one head."""
    weights, keys = record.weights, record.keys
    if not isinstance(weights, Tensor) or not keys or weights.dim() < 2 or weights.shape[-1] != math.prod(keys):
        return None
    if weights.dim() > 4:
        return None
    shape = (weights.shape[0], *(1,) * (4 - weights.dim()), *weights.shape[1:])  # (B, h, R, K)
    rows = weights.reshape(shape).double()
    if record.valid is not None:
        valid = _as_rows(record.valid, weights.dim()).expand(rows.shape)
    else:
        valid = rows.ne(0).any(2, keepdim=True).any(1, keepdim=True).expand(rows.shape)
    logits = None if record.logits is None else record.logits.reshape(shape).double()
    return rows, valid, logits


def _as_rows(valid: Tensor, dims: int) -> Tensor:
    """A record's ``valid`` (broadcastable to weights of ``dims`` axes) as (B|1, h|1, R|1, K)."""
    while valid.dim() < dims:
        valid = valid.unsqueeze(0)
    return valid.reshape(valid.shape[0], *(1,) * (4 - dims), *valid.shape[1:])


def row_statistics(record: Record, top_k: int = 5) -> Optional[RowStatistics]:
    """The statistics (module docstring) of a record's rows, per head; None for a record that
    weighs no key grid."""
    found = rows_of_record(record)
    if found is None:
        return None
    rows, valid, logits = found
    total = rows.sum(-1)
    counted = total > 0
    if record.queries and record.keys and tuple(record.queries) == tuple(record.keys) and rows.shape[2] > 0:
        own = record.probes if record.probes is not None else torch.arange(rows.shape[2], device=rows.device)
        own = own.to(rows.device)[None, None, :, None].expand(*valid.shape[:3], 1)
        counted = counted & valid.gather(-1, own).squeeze(-1)  # padded queries left out
    p = rows / total.clamp(min=1e-300).unsqueeze(-1)
    entropy = -(p * p.clamp(min=1e-300).log()).sum(-1)
    choices = valid.sum(-1).double()
    ratio = entropy / choices.log()
    largest = p.max(-1)
    top = p.topk(min(top_k, p.shape[-1]), dim=-1).values.sum(-1)

    def mean(value: Tensor, where: Tensor) -> Tensor:
        where = where.expand_as(value)
        return torch.where(where, value, 0.0).sum((0, 2)) / where.sum((0, 2))  # NaN where no row counts

    max_logit = None
    if logits is not None:
        max_logit = mean(logits.masked_fill(~valid, -math.inf).amax(-1), counted)
    lse = None
    if record.lse is not None:  # (B, [h,] queries...): every query, not only the rows'
        lse = record.lse.double().reshape(rows.shape[0], rows.shape[1], -1)
        finite = lse.isfinite()  # a query with no key left has lse -inf
        lse = torch.where(finite, lse, 0.0).sum((0, 2)) / finite.sum((0, 2))
    return RowStatistics(
        entropy=mean(entropy, counted),
        entropy_ratio=mean(ratio, counted & (choices > 1)),
        max_weight=mean(largest.values, counted),
        top_mass=mean(top, counted),
        top_k=top_k,
        max_logit=max_logit,
        lse=lse,
        same_key=_same_key(largest.indices, counted),
        rows=rows,
        valid=valid,
        counted=counted,
    )


def _same_key(keys: Tensor, counted: Tensor) -> Tensor:
    """Per head, the share of the counted rows whose key is their example's most frequent one."""
    shares = []
    for head in range(keys.shape[1]):
        agree = total = 0
        for example, keep in zip(keys[:, head], counted[:, head]):
            chosen = example[keep]
            if len(chosen):
                agree += int(chosen.bincount().max())
                total += len(chosen)
        shares.append(agree / total if total else math.nan)
    return torch.tensor(shares, dtype=torch.float64)
