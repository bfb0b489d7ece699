"""The graph domain's evaluation hooks: scored nodes in their own subgraphs (HAN: copies of the
graph), their in-neighbours as items (HAN: their meta-paths), erased by dropping edges, and label
agreement as the known structure (HAN: per meta-path; and the planted gold meta-path at the
semantic level)."""

from __future__ import annotations

import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.datasets import KarateClub

from domains.graph import HANClassifier, HeteroNodeClassification, PlantedAuthors
from domains.graph.models import NodeClassifier
from domains.graph.tasks.nodes import NodeClassification, neighbours
from framework.attention import capture
from framework.evaluation.faithfulness import faithfulness_rows
from framework.evaluation.intrinsic import intrinsic_rows
from framework.evaluation.plausibility import plausibility_rows


def _karate() -> Data:
    graph = KarateClub()[0]
    graph.target_mask = torch.arange(graph.num_nodes) % 3 == 0
    return graph


def test_subgraphs_give_the_whole_graph_s_decisions():
    graph, model, task = (
        _karate(),
        NodeClassifier(34, 4, dropout=0.0, attention_dropout=0.0).eval(),
        NodeClassification(4),
    )
    batch = task.evaluation_batch(model, graph)
    assert int(batch.target_mask.sum()) == int(graph.target_mask.sum())
    assert torch.allclose(task.decision(model, batch), model(graph.x, graph.edge_index)[graph.target_mask], atol=1e-5)


def test_neighbours_are_the_items():
    graph, model, task = (
        _karate(),
        NodeClassifier(34, 4, dropout=0.0, attention_dropout=0.0).eval(),
        NodeClassification(4),
    )
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
    graph = Data(
        x=x, edge_index=edge_index, y=torch.tensor([0, 0, 0, 1]), target_mask=torch.tensor([True, False, False, False])
    )
    model, task = NodeClassifier(4, 2, dropout=0.0, attention_dropout=0.0).eval(), NodeClassification(2)
    views = task.gold_views(model, task.evaluation_batch(model, graph))
    assert len(views) == 2
    assert views[0].gold[0, 0].tolist() == [True, True, False] and views[0].keys[0, 0].all()
    assert torch.allclose(views[-1].weights.sum(-1), torch.ones(1, 1))
    assert task.item_attention(NodeClassifier(4, 2, attention="none"), graph) is None


# ------------------------------------------------------------------ HAN: meta-paths as items


def _planted():
    torch.manual_seed(0)
    data = PlantedAuthors(num_authors=90, num_papers=150, num_venues=12, num_features=8, train_per_class=10)
    graph = data.split("val")[0]
    model = HANClassifier(
        data.in_channels,
        data.num_classes,
        metapaths=data.metapaths,
        hidden_channels=4,
        heads=2,
        dropout=0.0,
        attention_dropout=0.0,
    ).eval()
    return graph, model, HeteroNodeClassification(data.num_classes)


def test_copies_of_the_graph_give_its_decisions_and_its_meta_path_weights():
    graph, model, task = _planted()
    batch = task.evaluation_batch(model, graph)
    scored = graph["author"].target_mask
    assert int(batch["author"].target_mask.sum()) == int(scored.sum()) and batch["author"].num_nodes == 90 * int(
        scored.sum()
    )
    with torch.no_grad():
        torch.testing.assert_close(task.decision(model, batch), task.decision(model, graph), atol=1e-5, rtol=0)
        items = task.item_attention(model, batch)
        with capture(model) as maps:
            task.run_model(model, graph)
    (semantic,) = [r.weights for r in maps["layers.0"] if not isinstance(r.weights, tuple)]
    assert items.blocks == ("layers.0",) and items.valid.all()  # every author is its own neighbour along both paths
    torch.testing.assert_close(items.weights, semantic.expand(len(items.weights), 2), atol=1e-5, rtol=0)


def test_erasing_a_meta_path_drops_that_node_s_edges_along_it_alone():
    graph, model, task = _planted()
    batch = task.evaluation_batch(model, graph)
    first = int(batch["author"].target_mask.nonzero()[0])
    erased = torch.zeros(int(batch["author"].target_mask.sum()), 2, dtype=torch.bool)
    erased[0, 0] = True  # the first scored node's APA
    dropped = task.erase_items(batch, erased)
    apa, ava = batch["author", "APA", "author"].edge_index, batch["author", "AVA", "author"].edge_index
    kept = dropped["author", "APA", "author"].edge_index
    assert torch.equal(kept, apa[:, apa[1] != first]) and int((apa[1] == first).sum()) > 0
    assert torch.equal(dropped["author", "AVA", "author"].edge_index, ava)
    assert batch["author", "APA", "author"].edge_index is apa, "the evaluation batch itself is left as it was"
    with torch.no_grad():
        items = task.item_attention(model, dropped)
    assert items.valid.tolist()[0] == [False, True] and items.weights[0].tolist() == [0.0, 1.0]


def test_node_level_views_by_hand_on_a_star_with_two_meta_paths():
    # node 0 is scored; along A its neighbours 1 and 2 share its class and 3 does not; along B only 3
    graph = HeteroData()
    graph["author"].x, graph["author"].y = torch.eye(4), torch.tensor([0, 0, 0, 1])
    graph["author"].target_mask = torch.tensor([True, False, False, False])
    graph["author", "A", "author"].edge_index = torch.tensor([[0, 1, 2, 3], [0, 0, 0, 0]])
    graph["author", "B", "author"].edge_index = torch.tensor([[0, 3], [0, 0]])
    model = HANClassifier(
        4, 2, metapaths=["A", "B"], hidden_channels=2, heads=2, dropout=0.0, attention_dropout=0.0
    ).eval()
    task = HeteroNodeClassification(2)
    views = task.gold_views(model, task.evaluation_batch(model, graph))
    assert [view.name for view in views] == [
        "layer0 (layers.0) A vs same-class neighbours",
        "layer0 (layers.0) B vs same-class neighbours",
    ]
    assert views[0].gold[0, 0].tolist() == [True, True, False] and views[1].gold[0, 0].tolist() == [False]
    assert views[0].keys[0, 0].all() and views[1].keys[0, 0].all()  # itself left out
    torch.testing.assert_close(views[0].weights.sum(-1), torch.ones(1, 1))
    torch.testing.assert_close(views[1].weights, torch.ones(1, 1, 1))
    baseline = HANClassifier(4, 2, metapaths=["A", "B"], attention="none")
    assert task.item_attention(baseline, graph) is None and task.gold_views(baseline, graph) == []
    graph["author"].gold = torch.tensor([[False, True]]).expand(4, 2)  # B planted as the gold meta-path
    batch = task.evaluation_batch(model, graph)
    *_, semantic = task.gold_views(model, batch)
    with capture(model) as maps, torch.no_grad():
        task.run_model(model, graph)
    beta = maps["layers.0"][-1].weights
    assert semantic.name == "layer0 (layers.0) semantic vs planted meta-paths"
    torch.testing.assert_close(semantic.weights, beta.view(1, 1, 2), atol=1e-6, rtol=0)
    assert semantic.gold.tolist() == [[[False, True]]] and semantic.keys.all() and semantic.queries.tolist() == [[True]]


def test_the_faithfulness_and_intrinsic_tests_run_on_han():
    graph, model, task = _planted()
    batches = [task.evaluation_batch(model, graph)]
    rows = faithfulness_rows(model, task, batches, permutations=2, say=lambda line: None)
    assert {row.test for row in rows} == {"permutation", "erasure"}, (
        "no attribution: the meta-paths' vectors are the block's"
    )
    erasure = next(row for row in rows if row.test == "erasure")
    assert erasure.block == "layers.0" and "removed from the input" in erasure.setting
    found, _ = intrinsic_rows(model, task, batches, say=lambda line: None)
    assert any("APA vs same-class neighbours" in row.block for row in found)
    assert any("AVA vs same-class neighbours" in row.block for row in found)
    items = task.item_attention(model, batches[0])
    (mass,) = [
        row
        for row in found
        if row.block == "layer0 (layers.0) semantic vs planted meta-paths" and row.measure == "attention correctness"
    ]
    assert abs(mass.value - float(items.weights[:, 0].mean())) < 1e-6 and mass.baseline == 0.5  # APA's weight
    plausible = {row.measure: row for row in plausibility_rows(model, task, batches, methods=(), say=lambda line: None)}
    assert plausible["token F1"].block == "layers.0" and plausible["token F1"].setting.startswith("attention")
    assert plausible["token F1"].value == float(items.weights[0, 0] > items.weights[0, 1])  # the top meta-path is APA
