"""The graph domain's tasks: node classification on a graph (``nodes``: GAT, GATv2, GCN) and on
meta-path graphs (``hetero``: HAN)."""

from .hetero import HeteroNodeClassification
from .nodes import NodeClassification

__all__ = ["HeteroNodeClassification", "NodeClassification"]
