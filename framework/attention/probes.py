"""Probe queries: the exact attention rows of a few chosen queries, never the whole map.

A capture with ``probes`` (``attention.capture(model, probes=64)``) records, for each call of a
block, the rows of P probe queries only: weights (B, [heads,] P, K) over the K keys of the
record's key grid, with ``Record.probes`` the (P,) flat indices of those queries in its query
grid. A block that computes its maps on a fused path (``scaled_dot_product_attention``,
FlexAttention, the criss-cross kernels) computes these rows from its own projections,
``softmax(q_P K^T * scale + mask)``, at O(P K) memory (``AttentionBlock.gives_probe_rows``);
every other block records its weights as usual and the capture keeps their probe rows (a
block whose weights relate no query grid to a key grid, a gate or a pooling with learned
queries, keeps its full weights, which are small).

:func:`probe_index` says which queries are the probes: ``P`` (an int) spreads P probes evenly
over the grid (a lattice of about sqrt(P) x sqrt(P) pixels on a 2-D grid; every query when the
grid has at most P), and a list of positions names them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple, Optional, Union

import torch
from torch import Tensor

#: What a capture's ``probes`` may be: a number of probes, or the positions of the probe queries
#: (ints for 1-D grids or flat indices, tuples for positions of a grid).
Probes = Union[int, Sequence[Union[int, Sequence[int]]]]


class ProbeRows(NamedTuple):
    """What a block computes for its probe queries (see ``AttentionBlock.record_rows``).

    weights (B, [h,] P, K): the rows of the probe queries over the K keys of the key grid;
    valid (B|1, [h|1,] P|1, K) bool: the keys each row may attend (None: every key);
    logits: the energies before the normalisation, like ``weights`` (None where the block has
    none); entries outside ``valid`` are not defined.
    """

    weights: Tensor
    valid: Optional[Tensor] = None
    logits: Optional[Tensor] = None


def check_probes(probes: Optional[Probes]) -> None:
    """A capture's ``probes`` argument: None, a positive int, or a non-empty list of positions."""
    if probes is None:
        return
    if isinstance(probes, bool) or not isinstance(probes, (int, Sequence)) or isinstance(probes, str):
        raise ValueError(
            f"capture: probes must be a number of probe queries or a list of their positions, got {probes!r}"
        )
    if isinstance(probes, int) and probes < 1:
        raise ValueError(f"capture: probes must be at least 1, got {probes}")
    if not isinstance(probes, int) and not len(probes):
        raise ValueError("capture: probes is an empty list; give at least one position, or a number of probes")


def probe_index(grid: tuple[int, ...], probes: Probes, device: Optional[torch.device] = None) -> Tensor:
    """The (P,) flat indices, sorted and distinct, of the probe queries on a query ``grid``.

    ``probes`` an int P: every query when the grid has at most P; on a 2-D (h, w) grid the
    centres of an r x c lattice of cells, r c <= P and r / c about h / w; on other grids P
    evenly spaced positions. A list: those positions (an int is a flat index; a tuple a
    position of the grid), each checked against the grid.
    """
    size = math.prod(grid)
    if isinstance(probes, int):
        if probes >= size:
            index = torch.arange(size)
        elif len(grid) == 2:
            height, width = grid
            rows = min(height, max(1, round(math.sqrt(probes * height / width))))
            columns = min(width, max(1, probes // rows))
            at = lambda count, length: ((torch.arange(count) + 0.5) * length / count).long()  # noqa: E731
            index = (at(rows, height)[:, None] * width + at(columns, width)[None, :]).flatten()
        else:
            index = ((torch.arange(probes) + 0.5) * size / probes).long()
        return index.to(device)
    flat = []
    for position in probes:
        point = (position,) if isinstance(position, int) else tuple(position)
        if len(point) == 1 and len(grid) != 1:
            at = point[0]
            inside = 0 <= at < size
        else:
            inside = len(point) == len(grid) and all(0 <= p < g for p, g in zip(point, grid))
            at = sum(p * stride for p, stride in zip(point, strides(grid))) if inside else -1
        if not inside:
            raise ValueError(
                f"capture: probe {position!r} is outside the query grid {tuple(grid)} "
                f"(a flat index below {size}, or a position of the grid)"
            )
        flat.append(at)
    return torch.tensor(sorted(set(flat)), dtype=torch.long, device=device)


def strides(grid: tuple[int, ...]) -> list[int]:
    """Row-major strides of a grid: (h, w) -> [w, 1]."""
    return [math.prod(grid[i + 1 :]) for i in range(len(grid))]


def rows_of(
    weights: Optional[Tensor], queries: Optional[tuple[int, ...]], index_of: object
) -> Optional[tuple[Tensor, Tensor, Tensor]]:
    """The probe rows of full weights (B, [h,] Q, K) over a query grid and a key grid (None:
    the record has none): ``(index, rows, valid)``, where ``index_of(queries)`` gives the probe
    indices and valid (B, 1.., 1, K) marks the keys that some query of the example weighs in
    some head (keys masked before the normalisation get exactly 0)."""
    if weights is None:
        return None
    index = index_of(queries).to(weights.device)
    valid = weights.ne(0)
    for axis in range(1, weights.dim() - 1):
        valid = valid.any(axis, keepdim=True)
    return index, weights.index_select(-2, index), valid
