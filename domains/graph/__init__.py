"""Graph domain: node classification with graph attention networks (GAT, GATv2) and GCN.

    python -m framework fit --config domains/graph/gat.yaml                    # KarateClub
    FRAMEWORK_DATA_DIR=../shared/data python -m framework fit --config domains/graph/gat_cora.yaml
"""

from .data import KarateClubData, NodeClassificationData, PlanetoidData
from .model import NodeClassifier
from .task import NodeClassification

__all__ = ["KarateClubData", "NodeClassification", "NodeClassificationData", "NodeClassifier", "PlanetoidData"]
