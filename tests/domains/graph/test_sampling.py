"""The torch neighbour sampler against the graph it samples, and the sampled model against the full one."""

from __future__ import annotations

import torch
import torch_geometric.typing
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_geometric.sampler import NeighborSampler, NodeSamplerInput

from domains.graph import NodeClassifier
from domains.graph.data import TorchNeighborSampler, neighbor_sampler

N = 40


def random_graph(seed: int = 0) -> Data:
    """N nodes, about 5 N distinct directed edges, no self loops, random features."""
    gen = torch.Generator().manual_seed(seed)
    edges = torch.unique(torch.randint(0, N, (2, 5 * N), generator=gen), dim=1)
    edges = edges[:, edges[0] != edges[1]]
    return Data(x=torch.randn(N, 6, generator=gen), edge_index=edges, num_nodes=N)


def sample(graph: Data, seeds: torch.Tensor, fanouts: list[int]):
    return TorchNeighborSampler(graph, num_neighbors=fanouts).sample_from_nodes(NodeSamplerInput(None, seeds))


def test_each_node_keeps_min_of_fanout_and_degree_of_its_real_in_edges():
    graph, seeds = random_graph(), torch.tensor([3, 17, 25])
    out = sample(graph, seeds, [2, 3])
    in_degree = torch.bincount(graph.edge_index[1], minlength=N)
    existing = set(map(tuple, graph.edge_index.t().tolist()))
    source, target = out.node[out.row], out.node[out.col]

    assert torch.equal(out.node[:3], seeds) and len(out.node.unique()) == len(out.node)
    assert set(zip(source.tolist(), target.tolist())) <= existing
    assert len(set(zip(source.tolist(), target.tolist()))) == len(source)  # without replacement
    hop1 = slice(0, out.num_sampled_edges[0])
    assert set(target[hop1].tolist()) <= set(seeds.tolist())
    for seed in seeds:
        assert (target[hop1] == seed).sum() == min(2, in_degree[seed])
    first_hop_nodes = out.node[3 : 3 + out.num_sampled_nodes[1]]
    assert set(first_hop_nodes.tolist()) == set(source[hop1].tolist()) - set(seeds.tolist())
    hop2 = target[out.num_sampled_edges[0] :]
    for node in first_hop_nodes:
        assert (hop2 == node).sum() == min(3, in_degree[node])


def test_fanout_minus_one_takes_every_in_edge():
    graph, seeds = random_graph(1), torch.tensor([0, 9])
    out = sample(graph, seeds, [-1])
    sampled = set(zip(out.node[out.row].tolist(), out.node[out.col].tolist()))
    want = {tuple(e) for e in graph.edge_index.t().tolist() if e[1] in (0, 9)}
    assert sampled == want


def test_neighbours_are_drawn_uniformly():
    graph = Data(edge_index=torch.stack([torch.arange(1, 11), torch.zeros(10, dtype=torch.long)]), num_nodes=11)
    sampler, counts = TorchNeighborSampler(graph, num_neighbors=[3]), torch.zeros(11)
    torch.manual_seed(0)
    for _ in range(1500):
        out = sampler.sample_from_nodes(NodeSamplerInput(None, torch.tensor([0])))
        counts[out.node[out.row]] += 1
    expected = 1500 * 3 / 10
    assert counts[0] == 0 and ((counts[1:] - expected).abs() < 0.15 * expected).all(), counts


def test_loader_batches_carry_the_graphs_edges_and_match_the_full_graph_model():
    """With every neighbour kept, a 2-layer model's outputs at the seeds equal the full-graph ones."""
    graph = random_graph(2)
    loader = NeighborLoader(
        graph,
        num_neighbors=[-1, -1],
        batch_size=8,
        input_nodes=torch.arange(0, N, 3),
        neighbor_sampler=neighbor_sampler(graph, [-1, -1]),
    )
    model = NodeClassifier(6, 3, hidden_channels=4, heads=2).eval()
    full = model(graph.x, graph.edge_index)
    for batch in loader:
        global_edges = batch.n_id[batch.edge_index]
        assert torch.equal(global_edges, graph.edge_index[:, batch.e_id])
        seeds = batch.n_id[: batch.batch_size]
        torch.testing.assert_close(model(batch.x, batch.edge_index)[: batch.batch_size], full[seeds])


def test_pygs_own_sampler_is_used_when_a_kernel_is_installed(monkeypatch):
    graph = random_graph()
    monkeypatch.setattr(torch_geometric.typing, "WITH_PYG_LIB", False)
    monkeypatch.setattr(torch_geometric.typing, "WITH_TORCH_SPARSE", False)
    assert type(neighbor_sampler(graph, [2])) is TorchNeighborSampler
    monkeypatch.setattr(torch_geometric.typing, "WITH_PYG_LIB", True)
    assert type(neighbor_sampler(graph, [2])) is NeighborSampler
