"""HAN against a dense reference written from the paper's equations (node-level attention per
meta-path, semantic attention over them), and its weights path against torch_geometric's HANConv."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import HANConv

from framework.attention import ShapeError, capture, create
from framework.attention.graph import HeterogeneousGraphAttention
from tests.attention.reference import assert_matches_reference, randomize_

AUTHORS, PAPERS, C = 5, 6, 3
FEATURES = {"author": 4, "paper": 3}
EDGE_TYPES = [
    ("author", "writes", "paper"),
    ("paper", "cites", "paper"),
    ("paper", "written_by", "author"),
    ("author", "coauthor", "author"),
]
METADATA = (list(FEATURES), EDGE_TYPES)


def edges(sources: int, targets: int, count: int, seed: int) -> torch.Tensor:
    """Random distinct edges; some targets get none (they read nothing along that meta-path)."""
    gen = torch.Generator().manual_seed(seed)
    pairs = torch.stack(
        [torch.randint(sources, (count,), generator=gen), torch.randint(targets - 1, (count,), generator=gen)]
    )
    return torch.unique(pairs, dim=1)


def graph():
    gen = torch.Generator().manual_seed(0)
    return (
        torch.randn(AUTHORS, FEATURES["author"], generator=gen),
        torch.randn(PAPERS, FEATURES["paper"], generator=gen),
        edges(AUTHORS, PAPERS, 8, 1),
        edges(PAPERS, PAPERS, 9, 2),
        edges(PAPERS, AUTHORS, 8, 3),
        edges(AUTHORS, AUTHORS, 6, 4),
    )


class TwoTypes(nn.Module):
    """The block over authors and papers with tensors in and one tensor out (for the reference check)."""

    def __init__(self, block: HeterogeneousGraphAttention, need_weights: bool) -> None:
        super().__init__()
        self.block, self.need_weights = block, need_weights

    def forward(self, author, paper, *edge_indices):
        out = self.block(
            {"author": author, "paper": paper}, dict(zip(EDGE_TYPES, edge_indices)), need_weights=self.need_weights
        )
        out = out.output if self.need_weights else out
        return torch.cat([out["author"], out["paper"]])


def linear(layer, x):
    return x @ layer.weight.T + layer.bias


def han_reference(adapter, author, paper, *edge_indices):
    """Dense node-level softmax over each meta-path's neighbours, ReLU, semantic softmax over meta-paths."""
    block = adapter.block
    conv, heads = block.conv, block.heads
    h = {t: linear(conv.proj[t], x).view(len(x), heads, -1) for t, x in (("author", author), ("paper", paper))}
    per_target = {"author": [], "paper": []}
    for (source, relation, target), edge_index in zip(EDGE_TYPES, edge_indices):
        key = f"{source}__{relation}__{target}"
        adjacency = torch.zeros(len(h[target]), len(h[source]), dtype=torch.bool)
        adjacency[edge_index[1], edge_index[0]] = True
        e = F.leaky_relu(
            (h[target] * conv.lin_dst[key]).sum(-1)[:, None] + (h[source] * conv.lin_src[key]).sum(-1)[None],
            conv.negative_slope,
        )  # (i, j, H)
        e = e.masked_fill(~adjacency[..., None], -1e300)
        weights = torch.exp(e - e.max(1, keepdim=True).values) * adjacency[..., None]
        alpha = weights / weights.sum(1, keepdim=True).clamp(min=1e-300)  # a node without neighbours reads 0
        per_target[target].append(torch.relu(torch.einsum("ijh,jhc->ihc", alpha, h[source]).flatten(1)))
    out = []
    for node_type in ("author", "paper"):
        z = per_target[node_type]
        w = torch.stack([(conv.q[0] * torch.tanh(linear(conv.k_lin, z_p))).sum(-1).mean() for z_p in z])
        beta = torch.exp(w - w.max()) / torch.exp(w - w.max()).sum()
        combined = sum(b * z_p for b, z_p in zip(beta, z))
        out.append(combined if block.concat else combined.view(len(combined), heads, -1).mean(1))
    return torch.cat(out)


@pytest.mark.parametrize("need_weights", [False, True], ids=["han_conv", "with_weights"])
@pytest.mark.parametrize("heads, concat", [(1, True), (2, True), (2, False)])
def test_matches_dense_reference(need_weights, heads, concat, device):
    block = randomize_(HeterogeneousGraphAttention(FEATURES, C, METADATA, heads=heads, concat=concat))
    assert_matches_reference(TwoTypes(block, need_weights), han_reference, *graph(), device=device)


def test_weights_path_is_han_conv_with_the_same_parameters():
    """The path that keeps the weights gives HANConv's output and HANConv's semantic attention."""
    block = randomize_(HeterogeneousGraphAttention(FEATURES, C, METADATA, heads=2))
    conv = HANConv(FEATURES, 2 * C, METADATA, heads=2)
    conv.load_state_dict(copy.deepcopy(block.conv.state_dict()))
    author, paper, *edge_indices = graph()
    x_dict, edge_index_dict = {"author": author, "paper": paper}, dict(zip(EDGE_TYPES, edge_indices))
    out, (node_level, semantic), _ = block(x_dict, edge_index_dict, need_weights=True)
    want, want_semantic = conv(x_dict, edge_index_dict, return_semantic_attention_weights=True)
    for node_type in FEATURES:
        torch.testing.assert_close(out[node_type], want[node_type])
        torch.testing.assert_close(semantic[node_type], want_semantic[node_type])
    for edge_type, edge_index in edge_index_dict.items():
        index, alpha = node_level[edge_type]
        assert torch.equal(index, edge_index) and alpha.shape == (edge_index.shape[1], 2)
        totals = torch.zeros(len(x_dict[edge_type[2]]), 2).index_add_(0, edge_index[1], alpha)
        reached = torch.zeros(len(x_dict[edge_type[2]]), dtype=torch.bool)
        reached[edge_index[1]] = True
        torch.testing.assert_close(totals[reached], torch.ones(int(reached.sum()), 2))


def test_one_node_type_with_meta_paths_and_one_relation():
    """A tensor of features with meta-paths by name (the graph domain's use), and with one tensor of
    edges (``gat``'s signature): the same numbers as the typed form, keyed as given."""
    x, edge_index = torch.randn(AUTHORS, 4), edges(AUTHORS, AUTHORS, 7, 5)
    named = create("han", 4, C, metadata=["coauthor", "cites"], heads=2)
    paths = {"coauthor": edge_index, "cites": edges(AUTHORS, AUTHORS, 9, 6)}
    out, (node_level, semantic), _ = named(x, paths, need_weights=True)
    typed = named({"node": x}, {("node", name, "node"): e for name, e in paths.items()})
    torch.testing.assert_close(out, typed["node"])
    assert set(node_level) == {"coauthor", "cites"} and semantic.shape == (2,)
    single = create("han", 4, C, heads=2)
    out, ((index, alpha), semantic), _ = single(x, edge_index, need_weights=True)
    assert out.shape == (AUTHORS, 2 * C) and torch.equal(index, edge_index) and semantic.tolist() == [1.0]
    torch.testing.assert_close(out, single(x, edge_index))


def test_capture_records_both_levels():
    block = HeterogeneousGraphAttention(FEATURES, C, METADATA, heads=2)
    author, paper, *edge_indices = graph()
    with capture(block) as maps:
        block({"author": author, "paper": paper}, dict(zip(EDGE_TYPES, edge_indices)))
    records = maps["han"]
    assert len(records) == len(EDGE_TYPES) + 2  # one per meta-path, one per target type
    assert [tuple(r.weights[0].shape) for r in records[:4]] == [tuple(e.shape) for e in edge_indices]
    assert [r.weights.shape for r in records[4:]] == [(2,), (2,)]
    assert block.weights_image(records[0]) is None


def test_errors_name_the_block_and_the_input():
    block = HeterogeneousGraphAttention(FEATURES, C, METADATA)
    author, paper, *edge_indices = graph()
    x_dict, edge_index_dict = {"author": author, "paper": paper}, dict(zip(EDGE_TYPES, edge_indices))
    with pytest.raises(ShapeError, match=r"han: x\['paper'\] must have shape \(N, 3\), got \(6, 4\)"):
        block({"author": author, "paper": torch.randn(PAPERS, 4)}, edge_index_dict)
    with pytest.raises(
        ValueError, match=r"han: edge type \('paper', 'cited_by', 'author'\) is not in the block's metadata"
    ):
        block(x_dict, {("paper", "cited_by", "author"): edge_indices[0]})
    with pytest.raises(ShapeError, match=r"han: edge_index must have shape \(2, E\), got \(3, 4\)"):
        create("han", 4, C)(author, torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="every edge type must be"):
        HeterogeneousGraphAttention(4, C, (["a"], [("a", "r", "b")]))
    with pytest.raises(ValueError, match="in_channels names the node types"):
        HeterogeneousGraphAttention({"a": 4}, C, (["a", "b"], [("a", "r", "b")]))
