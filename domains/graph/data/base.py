"""Node classification data: one graph, split by node masks, loaded whole or in sampled batches."""

from __future__ import annotations

import copy
from typing import Literal, Optional

import torch
from torch.utils.data import DataLoader
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_geometric.transforms import NormalizeFeatures

from framework.data import SPLITS, SplitDataModule
from framework.data.module import Split
from framework.data.sampling import EpochShuffle, loader_generator
from framework.errors import ConfigError
from framework.values import NonNegativeInt, PositiveInt, declare, either

from .sampling import neighbor_sampler

Sampling = Literal["full", "neighbor"]

#: Neighbours sampled per node at one hop: a count, or -1 for all of them.
NeighbourCount = either(
    "NeighbourCount",
    "an int >= 1, or -1 (all)",
    PositiveInt,
    declare("AllNeighbours", int, "-1 (all)", low=-1, high=-1),
)


def scoring(graph: Data, mask: torch.Tensor) -> Data:
    """A shallow copy of ``graph`` whose ``target_mask`` (N,) bool marks the nodes a batch scores."""
    view = copy.copy(graph)
    view.target_mask = mask
    return view


def mark_seeds(batch: Data) -> Data:
    """NeighborLoader puts a batch's ``batch_size`` seed nodes first: they are the scored nodes."""
    batch.target_mask = torch.arange(batch.num_nodes) < batch.batch_size
    return batch


class NodeClassificationData(SplitDataModule):
    """Base of the graph data modules: a subclass returns one graph from :meth:`load_graph`
    with ``x`` (N, F), ``edge_index`` (2, E), ``y`` (N,) and ``{train,val,test}_mask`` (N,).

    Every split is the whole graph with a ``target_mask``: the nodes whose labels the split
    scores (the task reads only those). With ``sampling: full`` a split is one batch, so an
    epoch is one step (small graphs: Cora, CiteSeer, PubMed). With ``sampling: neighbor``
    a split is loaded by PyG's ``NeighborLoader`` in batches of ``batch_size`` seed nodes of
    the split, each with ``num_neighbors[l]`` neighbours sampled per node at hop l (-1: all),
    for graphs whose full propagation does not fit in memory. Validation and test batches
    are sampled the same way.

    Args:
        sampling: ``full`` (one batch holds the whole graph) or ``neighbor``.
        num_neighbors: neighbours sampled per node and hop, one entry per model layer.
        batch_size: seed nodes per training batch (``neighbor`` only).
        eval_batch_size: seed nodes per validation/test batch (default ``batch_size``).
        normalize_features: scale every node's features to sum 1, as the GAT and GCN
            reference code does with bag-of-words features.
        num_workers, predict_split: as in :class:`~framework.data.SplitDataModule`.
    """

    def __init__(
        self,
        sampling: Sampling = "full",
        num_neighbors: Optional[list[NeighbourCount]] = None,
        batch_size: PositiveInt = 512,
        eval_batch_size: Optional[PositiveInt] = None,
        normalize_features: bool = True,
        num_workers: NonNegativeInt = 0,
        predict_split: Split = "test",
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers, predict_split)
        num_neighbors = [10, 10] if num_neighbors is None else list(num_neighbors)
        if not num_neighbors:
            raise ConfigError(f"data.num_neighbors must list a count per hop (-1: all), got {num_neighbors}")
        self.sampling, self.num_neighbors, self.normalize_features = sampling, num_neighbors, normalize_features
        self.graph: Optional[Data] = None

    @property
    def in_channels(self) -> Optional[int]:
        """Features per node, once set up: the size the CLI gives ``model.in_channels``."""
        return None if self.graph is None else self.graph.num_features

    @property
    def num_classes(self) -> Optional[int]:
        """Classes (the largest label + 1), once set up: ``model.num_classes`` and ``task.num_classes``."""
        return None if self.graph is None else int(self.graph.y.max()) + 1

    def load_graph(self) -> Data:
        """The graph with its features, labels and split masks."""
        raise TypeError(f"{type(self).__name__} must define load_graph(), returning a torch_geometric Data")

    def make_splits(self) -> dict[str, list[Data]]:
        graph = self.load_graph()
        self.graph = NormalizeFeatures()(graph) if self.normalize_features else graph
        empty = next((split for split in SPLITS if not bool(self.graph[f"{split}_mask"].any())), None)
        if empty is not None:
            raise self.empty_split(empty)
        return {split: [scoring(self.graph, self.graph[f"{split}_mask"])] for split in SPLITS}

    def loader(self, name: str, shuffle: bool = False) -> DataLoader:
        (graph,) = self.split(name)
        if self.sampling == "full":
            return DataLoader([graph], batch_size=None, num_workers=self.num_workers, generator=loader_generator())
        return NeighborLoader(
            graph,
            num_neighbors=self.num_neighbors,
            input_nodes=graph.target_mask,
            batch_size=self.batch_size if shuffle else self.eval_batch_size,
            sampler=EpochShuffle(int(graph.target_mask.sum())) if shuffle else None,
            generator=loader_generator(),
            transform=mark_seeds,
            neighbor_sampler=neighbor_sampler(graph, self.num_neighbors),
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
        )
