"""Graph attention: each node attends to its neighbours (kind ``graph``): GAT (``gat``), GATv2
(``gatv2``) and HAN (``han``) over torch_geometric's layers. Importing registers them."""

from .gat import GraphAttention, GraphAttentionV2
from .han import HeterogeneousGraphAttention

__all__ = ["GraphAttention", "GraphAttentionV2", "HeterogeneousGraphAttention"]
