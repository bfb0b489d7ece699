"""GAT and GATv2 against a dense reference written from the papers' equations."""

from __future__ import annotations

import pytest
import torch

from framework.attention import AttentionOutput, ShapeError, capture, create
from framework.attention.graph import GraphAttention, GraphAttentionV2
from tests.attention.graph_reference import gat_reference, gatv2_reference, random_graph
from tests.attention.reference import assert_matches_reference, randomize_

N, F_IN, C = 6, 5, 4

CASES = [(GraphAttention, gat_reference), (GraphAttentionV2, gatv2_reference)]


@pytest.mark.parametrize("cls, reference", CASES, ids=["gat", "gatv2"])
@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("concat", [True, False])
def test_matches_dense_reference(cls, reference, heads, concat, device):
    torch.manual_seed(heads)
    block = randomize_(cls(F_IN, C, heads=heads, concat=concat))
    x = torch.randn(N, F_IN)
    assert_matches_reference(block, reference, x, random_graph(), device=device)
    assert block(x.double(), random_graph()).shape == (N, heads * C if concat else C)


@pytest.mark.parametrize("cls, reference", CASES, ids=["gat", "gatv2"])
def test_without_self_loops(cls, reference, device):
    block = randomize_(cls(F_IN, C, heads=2, add_self_loops=False))
    assert_matches_reference(block, reference, torch.randn(N, F_IN), random_graph(seed=1), device=device)


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
    assert torch.equal(record.weights[0], edges) and record.queries is None
    torch.testing.assert_close(record.weights[1], alpha)


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


@pytest.mark.parametrize(
    "cls, conv", [(GraphAttention, "GATConv"), (GraphAttentionV2, "GATv2Conv")], ids=["gat", "gatv2"]
)
def test_edge_features_and_bipartite_graphs_pass_through_to_torch_geometric(cls, conv, device):
    import torch_geometric.nn as pyg

    torch.manual_seed(0)
    edge_index, edge_attr = random_graph(), torch.randn(random_graph().shape[1], 3)
    block = cls(F_IN, C, heads=2, edge_dim=3).to(device)
    reference = getattr(pyg, conv)(F_IN, C, heads=2, edge_dim=3).to(device)
    reference.load_state_dict(block.conv.state_dict())
    x = torch.randn(N, F_IN, device=device)
    got = block(x, edge_index.to(device), edge_attr.to(device))
    torch.testing.assert_close(got, reference(x, edge_index.to(device), edge_attr.to(device)))
    got.sum().backward()
    assert block.conv.lin_edge.weight.grad is not None, "the edge features reach the scores"

    bipartite = cls((F_IN, 7), C, heads=2, add_self_loops=False).to(device)
    sources, targets = torch.randn(N, F_IN, device=device), torch.randn(3, 7, device=device)
    edges = torch.tensor([[0, 1, 2, 5, 4], [0, 0, 1, 2, 2]], device=device)
    out = bipartite((sources, targets), edges)
    assert out.shape == (3, 2 * C)
    torch.testing.assert_close(out, bipartite.conv((sources, targets), edges))
    with pytest.raises(ShapeError, match=r"x\[1\] must have shape \(M, 7\)"):
        bipartite((sources, torch.randn(3, 5, device=device)), edges)
