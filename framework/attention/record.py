"""What a capture keeps of one call of a block (:class:`Record`), and positions in its grids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor

from .probes import strides


@dataclass(frozen=True)
class Record:
    """One call's weights as a capture keeps them, and where their axes point.

    Attributes:
        weights: what the block's docstring lists under "Captured weights" (a tensor, or a
            tuple of tensors for blocks with several maps, such as CBAM's two gates).
        queries: the grid of the query positions, ``(h, w)`` for pixels, ``(n,)`` for tokens,
            when the weights relate positions to positions; None otherwise (gates, graphs).
        keys: the grid of the key positions likewise (``(h', w')`` for sub-sampled keys). Either
            grid is None where that axis holds no positions of the input (learned, projected or
            pooled rows: :attr:`AttentionBlock.key_positions <framework.attention.base.AttentionBlock>`).
        probes: for a capture with probes, the (P,) flat indices in the query grid of the
            queries whose rows ``weights`` holds, (B, [heads,] P, K) over the key grid's K
            positions; None for full weights.
        valid: with probes, the keys each row may attend, bool, broadcastable to ``weights``
            (None: all); where the block does not know its mask, the keys that some query of
            the example weighs.
        logits: with probes, where the block has them, the energies of the rows before the
            normalisation (like ``weights``; undefined outside ``valid``).
        lse: where the block's kernel computes it (FlexAttention, criss-cross), the
            log-sum-exp of the energies of every query, (B, [heads,] Q).
    """

    weights: Any
    queries: Optional[tuple[int, ...]] = None
    keys: Optional[tuple[int, ...]] = None
    probes: Optional[Tensor] = None
    valid: Optional[Tensor] = None
    logits: Optional[Tensor] = None
    lse: Optional[Tensor] = None


def middle_query(record: Record) -> tuple[int, ...]:
    """The middle of a record's query grid (of a record of probe rows: the probe nearest it);
    () without a query grid."""
    if not record.queries:
        return ()
    middle = tuple(size // 2 for size in record.queries)
    return nearest_probe(record, middle) if record.probes is not None else middle


def flat_position(grid: tuple[int, ...], position: tuple[int, ...]) -> int:
    """The row-major index of ``position`` in ``grid``."""
    return sum(p * s for p, s in zip(position, strides(grid)))


def probe_row(record: Record, query: tuple[int, ...]) -> int:
    """Which row of a probe record holds the query at ``query`` of its query grid; an error
    naming the probes when it is none of them."""
    at = flat_position(record.queries, query)
    found = (record.probes == at).nonzero()
    if not len(found):
        shown = [
            tuple(int(i) // s % g for g, s in zip(record.queries, strides(record.queries))) for i in record.probes[:8]
        ]
        raise ValueError(
            f"query {tuple(query)} is not among the record's {len(record.probes)} probe queries "
            f"({', '.join(map(str, shown))}{' ...' if len(record.probes) > 8 else ''}); capture with "
            "probes that include it (capture(model, probes=[...]))"
        )
    return int(found[0, 0])


def nearest_probe(record: Record, query: tuple[int, ...]) -> tuple[int, ...]:
    """The probe query of a probe record nearest to the position ``query`` of its query grid."""
    grid = record.queries
    positions = torch.stack([record.probes.cpu() // s % g for g, s in zip(grid, strides(grid))], -1)
    distance = (positions - torch.tensor(query)).square().sum(-1)
    return tuple(int(p) for p in positions[int(distance.argmin())])
