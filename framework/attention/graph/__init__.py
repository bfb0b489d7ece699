"""Graph attention: each node attends to its neighbours (kind ``graph``), GAT and GATv2 over
torch_geometric's layers. Importing registers them."""

from .gat import GraphAttention, GraphAttentionV2

__all__ = ["GraphAttention", "GraphAttentionV2"]
