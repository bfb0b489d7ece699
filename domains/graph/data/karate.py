"""Zachary's karate club, shipped inside torch_geometric: the embedded default (no data folder)."""

from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.datasets import KarateClub

from framework.errors import ConfigError
from framework.values import PositiveInt, Seed

from .base import NodeClassificationData


def stratified_masks(labels: torch.Tensor, train_per_class: int, seed: int) -> tuple[torch.Tensor, ...]:
    """Train/val/test masks (N,) bool: per class, a permutation drawn from ``seed``; its first
    ``train_per_class`` nodes train, then half of the rest (rounded down) validate, the others test."""
    generator = torch.Generator().manual_seed(seed)
    masks = torch.zeros(3, len(labels), dtype=torch.bool)
    for label in labels.unique():
        members = (labels == label).nonzero().flatten()
        members = members[torch.randperm(len(members), generator=generator)]
        if len(members) <= train_per_class:
            raise ConfigError(
                f"data.train_per_class={train_per_class} leaves no validation or test node in class "
                f"{int(label)}, which has {len(members)} nodes"
            )
        val_end = train_per_class + (len(members) - train_per_class) // 2
        masks[0, members[:train_per_class]] = True
        masks[1, members[train_per_class:val_end]] = True
        masks[2, members[val_end:]] = True
    return tuple(masks)


class KarateClubData(NodeClassificationData):
    """Zachary's karate club (34 members, 156 directed edges, 4 communities as labels),
    from ``torch_geometric.datasets.KarateClub``; one-hot node features (34).

    The graph has no standard split, so this module defines a deterministic one: per class,
    a permutation drawn from ``seed``; the first ``train_per_class`` members train, half
    of the rest (rounded down) validate, the others test. With the defaults: 8 train,
    12 validation and 14 test nodes.

    Args:
        train_per_class: labelled training nodes per community.
        seed: seed of the split.
        **kwargs: loading options of :class:`NodeClassificationData` (``sampling`` ...).
    """

    num_features, num_classes = 34, 4

    def __init__(self, train_per_class: PositiveInt = 2, seed: Seed = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.train_per_class, self.seed = train_per_class, seed

    def load_graph(self) -> Data:
        graph = KarateClub()[0]
        graph.train_mask, graph.val_mask, graph.test_mask = stratified_masks(graph.y, self.train_per_class, self.seed)
        return graph
