"""The graph domain's evaluation hooks: scored nodes in their own subgraphs, their in-neighbours
as items (erased by dropping edges), and label agreement as the known structure."""

from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.datasets import KarateClub

from domains.graph.models import NodeClassifier
from domains.graph.tasks.nodes import NodeClassification, neighbours


def _karate() -> Data:
    graph = KarateClub()[0]
    graph.target_mask = torch.arange(graph.num_nodes) % 3 == 0
    return graph


def test_subgraphs_give_the_whole_graph_s_decisions():
    graph, model, task = _karate(), NodeClassifier(34, 4, dropout=0.0, attention_dropout=0.0).eval(), NodeClassification(4)
    batch = task.evaluation_batch(model, graph)
    assert int(batch.target_mask.sum()) == int(graph.target_mask.sum())
    assert torch.allclose(task.decision(model, batch), model(graph.x, graph.edge_index)[graph.target_mask], atol=1e-5)


def test_neighbours_are_the_items():
    graph, model, task = _karate(), NodeClassifier(34, 4, dropout=0.0, attention_dropout=0.0).eval(), NodeClassification(4)
    batch = task.evaluation_batch(model, graph)
    items = task.item_attention(model, batch)
    degrees = torch.bincount(graph.edge_index[1], minlength=34)[graph.target_mask]
    assert torch.equal(items.valid.sum(-1), degrees) and items.blocks == ("layers.1",)
    assert torch.allclose(items.weights.sum(-1), torch.ones(len(degrees)))
    erased = torch.zeros_like(items.valid)
    erased[0, 0] = True
    dropped = task.erase_items(batch, erased)
    assert dropped.edge_index.shape[1] == batch.edge_index.shape[1] - 1
    slots = neighbours(dropped)
    assert int(slots.valid[0].sum()) == int(degrees[0]) - 1
    forward = task.item_forward(model, batch)
    logits = task.decision(model, batch)
    assert forward.vectors.shape == (*items.valid.shape, 34)
    assert torch.allclose(forward.forward(forward.vectors), logits, atol=1e-5)
    assert torch.allclose(forward.forward(torch.cat([forward.vectors] * 2)), logits.repeat(2, 1), atol=1e-5)


def test_label_agreement_by_hand_on_a_star():
    # node 0 is scored; neighbours 1 and 2 share its class, 3 does not
    x = torch.eye(4)
    edge_index = torch.tensor([[1, 2, 3, 0, 0, 0], [0, 0, 0, 1, 2, 3]])
    graph = Data(x=x, edge_index=edge_index, y=torch.tensor([0, 0, 0, 1]), target_mask=torch.tensor([True, False, False, False]))
    model, task = NodeClassifier(4, 2, dropout=0.0, attention_dropout=0.0).eval(), NodeClassification(2)
    views = task.gold_views(model, task.evaluation_batch(model, graph))
    assert len(views) == 2
    assert views[0].gold[0, 0].tolist() == [True, True, False] and views[0].keys[0, 0].all()
    assert torch.allclose(views[-1].weights.sum(-1), torch.ones(1, 1))
    assert task.item_attention(NodeClassifier(4, 2, attention="none"), graph) is None
