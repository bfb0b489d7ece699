"""A generated heterogeneous graph with planted communities (no data folder): authors write papers
with co-authors mostly of their own community and attend venues at random, so the meta-path
author-paper-author carries the labels and author-venue-author is noise."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Optional

import torch
from torch_geometric.data import HeteroData

from framework.errors import ConfigError
from framework.values import ClassCount, NonNegativeFloat, PositiveInt, Probability

from .hetero import HeteroNodeClassificationData
from .karate import stratified_masks

#: The meta-paths of :class:`PlantedAuthors` (its ``METAPATHS``).
PlantedMetaPath = Literal["APA", "AVA"]


class PlantedAuthors(HeteroNodeClassificationData):
    """Authors (the labelled nodes, ``num_classes`` communities), papers and venues, generated from ``seed``.

    Every paper has a community and ``authors_per_paper`` author seats, each filled from the
    paper's community with probability ``homophily`` and from all authors otherwise (an author
    drawn twice for one paper is one author of it); every
    author attends ``venues_per_author`` venues drawn uniformly. Author features are the
    community's mean (a random unit vector times ``signal``) plus standard normal noise,
    papers and venues have one constant feature. Meta-paths: ``APA`` (co-authors: mostly the
    same community) and ``AVA`` (the same venue: no information); APA is the gold meta-path
    (:meth:`gold_metapaths`, marked on the batches) unless ``homophily`` is 0. The split is per
    community: ``train_per_class`` training nodes, half of the rest (rounded down) validating,
    the others testing.
    Sizes: ``num_classes`` and, once set up, ``in_channels`` = ``num_features``.

    With the defaults: 400 authors (123 / 141 / 136 per community; 60 train, 169 validation,
    171 test), 3864 APA edges (10 neighbours per author, itself included) and 16080 AVA edges
    (40 per author).

    Args:
        num_authors, num_papers, num_venues: nodes of each type.
        num_classes: communities.
        num_features: author features.
        authors_per_paper, venues_per_author: edges of a paper and of an author.
        homophily: the chance that a co-author is drawn from the paper's community.
        signal: the norm of a community's feature mean (the noise has unit variance per feature).
        train_per_class: labelled training authors per community.
        metapaths: the meta-paths to build, distinct (default both).
        **kwargs: options of :class:`HeteroNodeClassificationData` (``neighbours``, ``seed`` ...).
    """

    METAPATHS = {
        "APA": [("author", "writes", "paper"), ("paper", "written_by", "author")],
        "AVA": [("author", "attends", "venue"), ("venue", "attended_by", "author")],
    }
    target = "author"

    def __init__(
        self,
        num_authors: PositiveInt = 400,
        num_papers: PositiveInt = 600,
        num_venues: PositiveInt = 40,
        num_classes: ClassCount = 3,
        num_features: PositiveInt = 16,
        authors_per_paper: PositiveInt = 3,
        venues_per_author: PositiveInt = 2,
        homophily: Probability = 0.8,
        signal: NonNegativeFloat = 1.0,
        train_per_class: PositiveInt = 20,
        metapaths: Optional[Sequence[PlantedMetaPath]] = None,
        **kwargs,
    ) -> None:
        super().__init__(metapaths=metapaths, **kwargs)
        if venues_per_author > num_venues:
            raise ConfigError(f"data.venues_per_author={venues_per_author} exceeds data.num_venues={num_venues}")
        self.save_hyperparameters()
        self.num_classes = num_classes

    def gold_metapaths(self) -> list[str]:
        """APA: co-authors are planted in the author's community (none with ``homophily`` 0); AVA is noise."""
        return ["APA"] if self.hparams.homophily > 0 else []

    def load_graph(self) -> HeteroData:
        h = self.hparams
        g = torch.Generator().manual_seed(self.seed)
        labels = torch.randint(h.num_classes, (h.num_authors,), generator=g)
        means = torch.nn.functional.normalize(torch.randn(h.num_classes, h.num_features, generator=g), dim=-1)
        features = h.signal * means[labels] + torch.randn(h.num_authors, h.num_features, generator=g)
        # co-authors: per paper and seat, an author of the paper's community, or any author
        community = torch.randint(h.num_classes, (h.num_papers,), generator=g)
        members = [torch.nonzero(labels == c).flatten() for c in range(h.num_classes)]
        if any(len(m) == 0 for m in members):
            raise ConfigError(
                f"data.num_authors={h.num_authors} leaves a community of the {h.num_classes} without authors"
            )
        own = torch.stack(
            [
                members[c][torch.randint(len(members[c]), (h.authors_per_paper,), generator=g)]
                for c in community.tolist()
            ]
        )
        anyone = torch.randint(h.num_authors, (h.num_papers, h.authors_per_paper), generator=g)
        authors = torch.where(torch.rand(h.num_papers, h.authors_per_paper, generator=g) < h.homophily, own, anyone)
        seats = torch.arange(h.num_papers).repeat_interleave(h.authors_per_paper)
        writes = torch.unique(torch.stack([authors.flatten(), seats]), dim=1).contiguous()
        venues = torch.rand(h.num_authors, h.num_venues, generator=g).argsort(-1)[:, : h.venues_per_author]
        attends = torch.stack([torch.arange(h.num_authors).repeat_interleave(h.venues_per_author), venues.flatten()])

        graph = HeteroData()
        graph["author"].x, graph["author"].y = features, labels
        graph["author"].train_mask, graph["author"].val_mask, graph["author"].test_mask = stratified_masks(
            labels, h.train_per_class, self.seed
        )
        graph["paper"].x = torch.ones(h.num_papers, 1)
        graph["venue"].x = torch.ones(h.num_venues, 1)
        graph["author", "writes", "paper"].edge_index = writes
        graph["paper", "written_by", "author"].edge_index = writes.flip(0)
        graph["author", "attends", "venue"].edge_index = attends
        graph["venue", "attended_by", "author"].edge_index = attends.flip(0)
        return graph
