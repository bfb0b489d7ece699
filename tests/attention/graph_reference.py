"""Dense references for GAT and GATv2, written from the papers' equations (used by the block
tests and the graph domain's tests)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

N = 6


def random_graph(n: int = N, seed: int = 0) -> torch.Tensor:
    """A ring (every node has an incoming edge), random extra edges and one self loop, no duplicates."""
    gen = torch.Generator().manual_seed(seed)
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    extra = torch.randint(0, n, (2, 2 * n), generator=gen)
    edges = torch.cat([ring, extra, torch.tensor([[2], [2]])], dim=1)
    return torch.unique(edges, dim=1)


def dense_adjacency(edge_index: torch.Tensor, n: int, self_loops: bool) -> torch.Tensor:
    """adj[i, j] = True when j sends to i (PyG's flow: edge_index[0] = source j, [1] = target i)."""
    adj = torch.zeros(n, n, dtype=torch.bool)
    adj[edge_index[1], edge_index[0]] = True
    return adj | torch.eye(n, dtype=torch.bool) if self_loops else adj


def aggregate(conv, e: torch.Tensor, adj: torch.Tensor, h_src: torch.Tensor) -> torch.Tensor:
    """Softmax of e (i, j, H) over the neighbours j of i, weighted sum of h_src (j, H, C), heads, bias."""
    alpha = torch.softmax(e.masked_fill(~adj[..., None], float("-inf")), dim=1)
    out = torch.einsum("ijh,jhc->ihc", alpha, h_src)
    out = out.flatten(1) if conv.concat else out.mean(1)
    return out + conv.bias


def gat_reference(block, x, edge_index):
    conv = block.conv
    h = (x @ conv.lin.weight.T).view(x.shape[0], conv.heads, conv.out_channels)  # h_i = W x_i
    score_dst = (h * conv.att_dst[0]).sum(-1)  # a_dst . h_i, (N, H)
    score_src = (h * conv.att_src[0]).sum(-1)  # a_src . h_j
    e = F.leaky_relu(score_dst[:, None] + score_src[None, :], conv.negative_slope)
    return aggregate(conv, e, dense_adjacency(edge_index, x.shape[0], conv.add_self_loops), h)


def gatv2_reference(block, x, edge_index):
    conv = block.conv
    shape = (x.shape[0], conv.heads, conv.out_channels)
    h_src = (x @ conv.lin_l.weight.T + conv.lin_l.bias).view(shape)  # W_src x_j: the messages
    h_dst = (x @ conv.lin_r.weight.T + conv.lin_r.bias).view(shape)  # W_dst x_i
    hidden = F.leaky_relu(h_dst[:, None] + h_src[None, :], conv.negative_slope)  # (i, j, H, C)
    e = (hidden * conv.att[0]).sum(-1)
    return aggregate(conv, e, dense_adjacency(edge_index, x.shape[0], conv.add_self_loops), h_src)
