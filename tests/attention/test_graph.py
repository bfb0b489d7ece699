"""GAT and GATv2 against a dense reference written from the papers' equations."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from framework.attention import AttentionOutput, ShapeError, capture, create
from framework.attention.graph import GraphAttention, GraphAttentionV2
from tests.attention.reference import assert_matches_reference, randomize_

N, F_IN, C = 6, 5, 4


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


CASES = [(GraphAttention, gat_reference), (GraphAttentionV2, gatv2_reference)]


@pytest.mark.parametrize("cls, reference", CASES, ids=["gat", "gatv2"])
@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("concat", [True, False])
def test_matches_dense_reference(cls, reference, heads, concat):
    torch.manual_seed(heads)
    block = randomize_(cls(F_IN, C, heads=heads, concat=concat))
    x = torch.randn(N, F_IN)
    assert_matches_reference(block, reference, x, random_graph())
    assert block(x.double(), random_graph()).shape == (N, heads * C if concat else C)


@pytest.mark.parametrize("cls, reference", CASES, ids=["gat", "gatv2"])
def test_without_self_loops(cls, reference):
    block = randomize_(cls(F_IN, C, heads=2, add_self_loops=False))
    assert_matches_reference(block, reference, torch.randn(N, F_IN), random_graph(seed=1))


@pytest.mark.parametrize("cls", [GraphAttention, GraphAttentionV2], ids=["gat", "gatv2"])
def test_weights_sum_to_one_over_incoming_edges(cls):
    block = cls(F_IN, C, heads=3)
    x, edge_index = torch.randn(N, F_IN), random_graph()
    plain = block(x, edge_index)
    assert isinstance(plain, torch.Tensor)
    result = block(x, edge_index, need_weights=True)
    assert isinstance(result, AttentionOutput)
    out, (edges, alpha) = result.output, result.weights
    torch.testing.assert_close(out, plain)
    n_edges = int((edge_index[0] != edge_index[1]).sum()) + N  # given self loops replaced by one per node
    assert edges.shape == (2, n_edges) and alpha.shape == (n_edges, 3)
    totals = torch.zeros(N, 3).index_add_(0, edges[1], alpha)
    torch.testing.assert_close(totals, torch.ones(N, 3))

    with capture(block) as maps:
        block(x, edge_index)
    (record,) = maps[block.block_name]
    assert torch.equal(record[0], edges)
    torch.testing.assert_close(record[1], alpha)


@pytest.mark.parametrize("cls", [GraphAttention, GraphAttentionV2], ids=["gat", "gatv2"])
def test_gradients_reach_every_parameter(cls):
    block = cls(F_IN, C, heads=2)
    block(torch.randn(N, F_IN), random_graph()).square().sum().backward()
    for name, p in block.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_shape_errors_name_block_and_tensor():
    block = create("gat", F_IN, C)
    with pytest.raises(ShapeError, match=r"gat: x must have shape \(N, 5\), got \(6, 3\)"):
        block(torch.randn(N, 3), random_graph())
    with pytest.raises(ShapeError, match=r"gat: edge_index must have shape \(2, E\), got \(3, 4\)"):
        block(torch.randn(N, F_IN), torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ShapeError, match="gatv2: x"):
        create("gatv2", F_IN, C)(torch.randn(N), random_graph())


def test_create():
    block = create("gat", 8, 4, heads=2)
    assert isinstance(block, GraphAttention)
    assert block(torch.randn(5, 8), torch.tensor([[0, 1, 2], [1, 2, 3]])).shape == (5, 8)
    assert create("gatv2", 8, 4, concat=False)(torch.randn(5, 8), torch.tensor([[0], [1]])).shape == (5, 4)
