"""The node classifier: the GAT paper's model, composed from the graph blocks as the paper says."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from domains.graph import NodeClassifier
from framework.attention.graph import GraphAttention, GraphAttentionV2
from tests.attention.graph_reference import gat_reference, gatv2_reference, random_graph
from tests.attention.reference import assert_matches_reference, randomize_


def test_gat_has_the_papers_cora_architecture():
    model = NodeClassifier(1433, 7)  # the defaults are the paper's Cora model
    hidden, output = model.layers
    assert isinstance(hidden, GraphAttention) and isinstance(output, GraphAttention)
    assert (hidden.conv.in_channels, hidden.conv.out_channels, hidden.conv.heads, hidden.conv.concat) == (
        1433,
        8,
        8,
        True,
    )
    assert (output.conv.in_channels, output.conv.out_channels, output.conv.heads, output.conv.concat) == (
        64,
        7,
        1,
        False,
    )
    assert hidden.conv.dropout == output.conv.dropout == model.dropout == 0.6
    x, edge_index = torch.randn(10, 1433), random_graph(10)
    assert hidden(x, edge_index).shape == (10, 64)
    assert model(x, edge_index).shape == (10, 7)


@pytest.mark.parametrize("attention, reference", [("gat", gat_reference), ("gatv2", gatv2_reference)])
def test_heads_concatenated_then_averaged_match_the_dense_formula(attention, reference, device):
    """Hidden layer: heads concatenated, ELU; output layer: heads averaged (output_heads=3)."""
    model = randomize_(NodeClassifier(5, 4, attention=attention, hidden_channels=3, heads=2, output_heads=3)).eval()
    assert model.layers[0].conv.concat and not model.layers[1].conv.concat

    def composed(model, x, edge_index):
        hidden = F.elu(reference(model.layers[0], x, edge_index))
        assert hidden.shape == (len(x), 2 * 3)
        return reference(model.layers[1], hidden, edge_index)

    assert_matches_reference(model, composed, torch.randn(6, 5), random_graph(6), device=device)


def test_dropout_on_features_and_coefficients_only_while_training():
    model = NodeClassifier(5, 4, hidden_channels=3, heads=2)
    x, edge_index = torch.randn(6, 5), random_graph(6)
    assert not torch.equal(model(x, edge_index), model(x, edge_index))
    model.eval()
    torch.testing.assert_close(model(x, edge_index), model(x, edge_index))
    no_dropout = NodeClassifier(5, 4, hidden_channels=3, heads=2, dropout=0.0, attention_dropout=0.0)
    torch.testing.assert_close(no_dropout(x, edge_index), no_dropout(x, edge_index))


def test_attention_switches_gatv2_and_none_is_gcn():
    from torch_geometric.nn import GCNConv

    assert all(isinstance(layer, GraphAttentionV2) for layer in NodeClassifier(5, 4, attention="gatv2").layers)
    gcn = NodeClassifier(5, 4, attention="none", hidden_channels=16, heads=1)
    assert all(isinstance(layer, GCNConv) for layer in gcn.layers)
    assert [(layer.in_channels, layer.out_channels) for layer in gcn.layers] == [(5, 16), (16, 4)]
    assert [layer.in_channels for layer in NodeClassifier(5, 4, attention="none", num_layers=3).layers] == [5, 64, 64]


def test_a_block_of_another_kind_names_the_slot():
    """Values outside their keys' domains are refused while parsing (tests/domains/graph/test_cli.py)."""
    with pytest.raises(ValueError) as error:
        NodeClassifier(5, 4, attention="mhsa")
    assert "attention block 'mhsa' is a sequence block; this slot takes graph blocks: gat, gatv2" in str(error.value)
