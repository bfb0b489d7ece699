"""Graph domain: node classification with graph attention networks (GAT, GATv2) and GCN.

* Model: :class:`NodeClassifier`, a stack of graph blocks from the registry (``gat``,
  ``gatv2``) or GCN layers (``attention: none``).
* Task: :class:`NodeClassification` (accuracy and macro F1 on the scored nodes, one node's
  neighbourhood attention drawn).
* Data: Zachary's karate club (:class:`KarateClubData`, the embedded default) and the
  Planetoid citation graphs (:class:`PlanetoidData`: Cora, CiteSeer, PubMed), whole or in
  neighbour-sampled batches (:class:`NodeClassificationData`).

    python -m framework fit --config domains/graph/gat.yaml                    # KarateClub
    FRAMEWORK_DATA_DIR=../shared/data python -m framework fit --config domains/graph/gat_cora.yaml
"""

from .data import KarateClubData, NodeClassificationData, PlanetoidData
from .models import NodeClassifier
from .task import NodeClassification

__all__ = ["KarateClubData", "NodeClassification", "NodeClassificationData", "NodeClassifier", "PlanetoidData"]
