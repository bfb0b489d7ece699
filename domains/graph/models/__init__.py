"""Graph networks: node classifiers built from a graph attention block (GAT, GATv2) or GCN layers."""

from .node_classifier import NodeClassifier

__all__ = ["NodeClassifier"]
