"""Graph domain: node classification with graph attention networks (GAT, GATv2) and GCN.

* Model: :class:`NodeClassifier`, a stack of graph blocks from the registry (``gat``,
  ``gatv2``) or GCN layers (``attention: none``).
* Task: :class:`NodeClassification` (accuracy and macro F1 on the scored nodes, one node's
  neighbourhood attention drawn).
* Data: Zachary's karate club (:class:`KarateClubData`, the embedded default) and the
  Planetoid citation graphs (:class:`PlanetoidData`: Cora, CiteSeer, PubMed), whole or in
  neighbour-sampled batches (:class:`NodeClassificationData`).
* Heterogeneous graphs: :class:`HANClassifier` (the ``han`` block over meta-path graphs) with
  :class:`HeteroNodeClassification` (``tasks/hetero.py``), on generated authors with planted
  communities (:class:`PlantedAuthors`, embedded) or the users of MovieLens 100K
  (:class:`MovieLensUsers`, age brackets): ``han.yaml``, ``han_movielens.yaml``.

    python -m framework fit --config domains/graph/gat.yaml                    # KarateClub
    FRAMEWORK_DATA_DIR=../shared/data python -m framework fit --config domains/graph/gat_cora.yaml
"""

from .data import KarateClubData, MovieLensUsers, NodeClassificationData, PlanetoidData, PlantedAuthors
from .models import HANClassifier, NodeClassifier
from .tasks import HeteroNodeClassification, NodeClassification

__all__ = [
    "HANClassifier",
    "HeteroNodeClassification",
    "KarateClubData",
    "MovieLensUsers",
    "NodeClassification",
    "NodeClassificationData",
    "NodeClassifier",
    "PlanetoidData",
    "PlantedAuthors",
]
