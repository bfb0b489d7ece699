"""Neighbour sampling for ``torch_geometric.loader.NeighborLoader`` in plain torch.

PyG samples neighbourhoods with compiled kernels from ``pyg-lib`` or ``torch-sparse``;
neither is on PyPI for current torch, and without them ``NeighborLoader`` fails on its
first batch. :func:`neighbor_sampler` returns PyG's own sampler when a kernel is
installed and :class:`TorchNeighborSampler` otherwise, which implements the same
homogeneous, uniform, without-replacement sampling in vectorised torch.
"""

from __future__ import annotations

import warnings
from typing import Optional

import torch
import torch_geometric.typing
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.sampler import NeighborSampler, SamplerOutput


def has_sampling_kernel() -> bool:
    """Whether PyG can sample neighbourhoods itself (``pyg-lib`` or ``torch-sparse``)."""
    return torch_geometric.typing.WITH_PYG_LIB or torch_geometric.typing.WITH_TORCH_SPARSE


def neighbor_sampler(graph: Data, num_neighbors: list[int]) -> NeighborSampler:
    """PyG's sampler where a kernel is installed, else :class:`TorchNeighborSampler`."""
    sampler = NeighborSampler if has_sampling_kernel() else TorchNeighborSampler
    return sampler(graph, num_neighbors=num_neighbors)


class TorchNeighborSampler(NeighborSampler):
    """``NeighborSampler`` whose homogeneous sampling runs in torch (no compiled kernel).

    Hop by hop, from the seeds outwards, each frontier node i keeps min(k, deg_in(i)) of
    its incoming edges j -> i, drawn uniformly without replacement (k = -1 keeps all);
    the sources not seen before become the next frontier. Per hop the work is one
    gather and two sorts over the frontier's incoming edges, O(sum of their degrees).

    Returns what PyG's kernels return: ``node`` (global ids, seeds first, then each hop's
    new nodes), ``row``/``col`` (local source/target of each sampled edge), ``edge`` (its
    position in the CSC order; the loader maps it back through ``perm``) and the nodes
    and edges sampled per hop. Randomness comes from torch's global generator.
    """

    def __init__(self, graph: Data, num_neighbors: list[int]) -> None:
        if not isinstance(graph, Data):
            raise TypeError(f"TorchNeighborSampler samples a homogeneous Data graph, got {type(graph).__name__}")
        with warnings.catch_warnings():  # PyG's advice to install pyg-lib: this class stands in for it
            warnings.filterwarnings("ignore", message=".*without a 'pyg-lib' installation.*")
            super().__init__(graph, num_neighbors=num_neighbors)

    def _sample(self, seed: Tensor, seed_time: Optional[Tensor] = None, **kwargs: object) -> SamplerOutput:
        """Sample around ``seed`` (S,) global node ids; ``seed_time`` is unused (no temporal sampling)."""
        local = torch.full((self.num_nodes,), -1, dtype=torch.long)
        local[seed] = torch.arange(len(seed))
        nodes, rows, cols, edges = [seed], [], [], []
        frontier = seed
        for fanout in self.num_neighbors.get_mapped_values():
            position, target = self._pick_in_edges(frontier, fanout)
            source = self.row[position]
            fresh = torch.unique(source[local[source] < 0])
            local[fresh] = torch.arange(len(fresh)) + sum(len(n) for n in nodes)
            nodes.append(fresh)
            rows.append(local[source])
            cols.append(local[target])
            edges.append(position)
            frontier = fresh
        return SamplerOutput(
            node=torch.cat(nodes),
            row=torch.cat(rows),
            col=torch.cat(cols),
            edge=torch.cat(edges),
            batch=None,
            num_sampled_nodes=[len(n) for n in nodes],
            num_sampled_edges=[len(e) for e in edges],
        )

    def _pick_in_edges(self, frontier: Tensor, fanout: int) -> tuple[Tensor, Tensor]:
        """CSC positions of the kept incoming edges of ``frontier`` and their target nodes."""
        start = self.colptr[frontier]
        degree = self.colptr[frontier + 1] - start
        owner = torch.repeat_interleave(torch.arange(len(frontier)), degree)  # frontier index of each edge
        first = torch.repeat_interleave(torch.cumsum(degree, 0) - degree, degree)
        position = start[owner] + torch.arange(len(owner)) - first
        if fanout >= 0:
            shuffled = torch.randperm(len(owner))
            shuffled = shuffled[torch.argsort(owner[shuffled], stable=True)]  # random order within each owner
            rank = torch.arange(len(owner)) - first
            keep = shuffled[rank < fanout]
            position, owner = position[keep], owner[keep]
        return position, frontier[owner]
