"""Graph networks: node classifiers built from a graph attention block (GAT, GATv2) or GCN layers, and
HAN over meta-path graphs (``han``)."""

from .han import HANClassifier
from .node_classifier import NodeClassifier

__all__ = ["HANClassifier", "NodeClassifier"]
