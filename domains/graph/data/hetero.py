"""Heterogeneous graphs for node classification along meta-paths (HAN, Wang et al., WWW 2019):
the typed graph, its meta-path graphs between nodes of the target type, split by node masks.

The typed graph's meta-paths (author-paper-author ...) become edge types between target
nodes with ``torch_geometric.transforms.AddMetaPaths``; a meta-path that reaches most nodes
(users who rated a common movie) keeps each node's ``neighbours`` strongest meta-path
neighbours (the most path instances, ties broken at random), so that the graph stays sparse.
Generated data that knows which meta-paths carry the labels (:meth:`~HeteroNodeClassificationData.gold_metapaths`)
marks them on every target node (``gold`` (N, P) bool), the gold evidence of the semantic-level
attention (the evaluation's, and the attention-training options' of the task).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import ClassVar, Optional

import torch
from torch.utils.data import DataLoader
from torch_geometric.data import HeteroData
from torch_geometric.transforms import AddMetaPaths

from framework.data import SPLITS, SplitDataModule
from framework.data.module import Split
from framework.data.sampling import loader_generator
from framework.errors import ConfigError
from framework.values import NonNegativeInt, Seed

EdgeType = tuple[str, str, str]


def strongest(edge_index: torch.Tensor, weight: torch.Tensor, num_nodes: int, k: int, seed: int) -> torch.Tensor:
    """The edges (2, E') that keep, for every target node, its ``k`` incoming edges of largest
    ``weight`` (E,) (integer path counts; ties broken by a random draw from ``seed``), on the
    edges' device."""
    device = edge_index.device
    jitter = torch.rand(len(weight), generator=torch.Generator().manual_seed(seed)).to(device)
    order = torch.argsort(weight.double() + 0.5 * jitter, descending=True)  # jitter < 1: only ties reorder
    order = order[torch.argsort(edge_index[1, order], stable=True)]  # by target, strongest first
    targets = edge_index[1, order]
    first = torch.searchsorted(targets, torch.arange(num_nodes, device=device))  # where each target's run starts
    rank = torch.arange(len(order), device=device) - first[targets]
    return edge_index[:, order[rank < k]]


class HeteroNodeClassificationData(SplitDataModule):
    """Base of the heterogeneous graph data modules: a subclass returns the typed graph from
    :meth:`load_graph` and names its meta-paths in ``METAPATHS``.

    The typed graph has node type ``target`` with ``x`` (N, F), ``y`` (N,) and
    ``{train,val,test}_mask`` (N,), other node types, and the edge types the meta-paths
    walk. Every split is one batch: a ``HeteroData`` with the target nodes only (features,
    labels, masks and ``target_mask``, the nodes the split scores) and one edge type
    ``(target, <meta-path name>, target)`` per chosen meta-path, edges j -> i for every
    path instance from j to i (so a node is its own neighbour). Where the data knows which
    chosen meta-paths carry the labels (:attr:`gold_evidence`), the target nodes have ``gold``
    (N, P) bool: True for those meta-paths, in the order of ``metapaths`` (the model never reads it).

    Sizes (:mod:`framework.data.sizes`): ``num_classes`` (a subclass states it when built) and
    ``in_channels``, the target nodes' features F (known once ``setup`` has built the graph).

    Args:
        metapaths: names of ``METAPATHS`` to build (the model's ``metapaths``; default all).
        neighbours: per node and meta-path, the most meta-path neighbours kept (0 = all).
        seed: the seed of the split and of the ties among neighbours.
        num_workers, predict_split: as in :class:`~framework.data.SplitDataModule`.
    """

    #: The meta-paths by name: each a walk of edge types from the target type back to it.
    METAPATHS: ClassVar[dict[str, list[EdgeType]]] = {}
    target: ClassVar[str] = "node"
    #: Classes K of the target nodes' labels; a subclass sets it in ``__init__``.
    num_classes: Optional[int] = None

    def __init__(
        self,
        metapaths: Optional[Sequence[str]] = None,
        neighbours: NonNegativeInt = 0,
        seed: Seed = 0,
        num_workers: NonNegativeInt = 0,
        predict_split: Split = "test",
    ) -> None:
        super().__init__(1, None, num_workers, predict_split)
        metapaths = list(self.METAPATHS) if metapaths is None else list(metapaths)
        unknown = [name for name in metapaths if name not in self.METAPATHS]
        if unknown:
            raise ConfigError(
                f"data.metapaths: unknown meta-path {unknown[0]!r}; {type(self).__name__} has "
                f"{', '.join(self.METAPATHS)}"
            )
        if not metapaths or len(set(metapaths)) < len(metapaths):
            raise ConfigError(f"data.metapaths must be distinct names among {list(self.METAPATHS)}, got {metapaths}")
        self.metapaths, self.neighbours, self.seed = metapaths, neighbours, seed
        self.graph: Optional[HeteroData] = None

    def load_graph(self) -> HeteroData:
        """The typed graph (see the class docstring)."""
        raise TypeError(f"{type(self).__name__} must define load_graph(), returning a torch_geometric HeteroData")

    def gold_metapaths(self) -> Optional[list[str]]:
        """The names of ``METAPATHS`` that carry the labels by construction (generated data), None
        where that is not known (the default)."""
        return None

    @property
    def gold_evidence(self) -> bool:
        """Whether the batches mark gold meta-paths: the data knows them and some are chosen."""
        return bool(set(self.gold_metapaths() or ()) & set(self.metapaths))

    def metapath_graph(self, typed: HeteroData) -> HeteroData:
        """The target nodes (with ``gold``, where known) and one edge type per chosen meta-path."""
        with warnings.catch_warnings():  # PyG multiplies the adjacencies as sparse CSR tensors, a beta feature
            warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
            walked = AddMetaPaths([self.METAPATHS[name] for name in self.metapaths], weighted=True)(typed)
        graph = HeteroData()
        for key in ("x", "y", *(f"{split}_mask" for split in SPLITS)):
            graph[self.target][key] = typed[self.target][key]
        if self.gold_evidence:
            gold = torch.tensor([name in self.gold_metapaths() for name in self.metapaths])
            graph[self.target].gold = gold.expand(typed[self.target].num_nodes, -1).clone()
        for index, name in enumerate(self.metapaths):
            walk = walked[self.target, f"metapath_{index}", self.target]
            edges = walk.edge_index
            if self.neighbours:
                edges = strongest(
                    edges, walk.edge_weight, typed[self.target].num_nodes, self.neighbours, self.seed + index
                )
            graph[self.target, name, self.target].edge_index = edges
        return graph

    @property
    def in_channels(self) -> Optional[int]:
        """Features F of the target nodes; None until ``setup`` has built the graph."""
        return None if self.graph is None else self.graph[self.target].num_features

    def make_splits(self) -> dict[str, list[HeteroData]]:
        self.graph = self.metapath_graph(self.load_graph())
        views = {}
        for split in SPLITS:
            if not bool(self.graph[self.target][f"{split}_mask"].any()):
                raise self.empty_split(split)
            view = copy.copy(self.graph)
            view[self.target].target_mask = self.graph[self.target][f"{split}_mask"]
            views[split] = [view]
        return views

    def loader(self, name: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(self.split(name), batch_size=None, num_workers=self.num_workers, generator=loader_generator())
