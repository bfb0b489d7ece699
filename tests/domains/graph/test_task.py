"""Node classification: scored nodes only, predictions, and the neighbourhood-attention picture."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from domains.graph import KarateClubData, NodeClassification, NodeClassifier
from domains.graph.pictures import draw_neighbourhood, node_coefficients
from framework.pictures import heatmap
from tests.conftest import on


@pytest.fixture
def karate():
    data = KarateClubData()
    data.setup("fit")
    return data


def test_loss_and_metrics_count_only_the_scored_nodes(karate):
    batch = karate.split("val")[0]
    model = NodeClassifier(34, 4).eval()
    step = NodeClassification(4).step(model, batch, "val")
    logits = model(batch.x, batch.edge_index)
    torch.testing.assert_close(step.preds, logits[batch.val_mask])
    assert torch.equal(step.target, batch.y[batch.val_mask])
    torch.testing.assert_close(step.loss, F.cross_entropy(logits[batch.val_mask], batch.y[batch.val_mask]))


def test_predict_names_the_nodes(karate):
    batch = karate.split("test")[0]
    out = NodeClassification(4).predict(NodeClassifier(34, 4).eval(), batch)
    assert torch.equal(out["node"], batch.test_mask.nonzero().flatten()) and out["logits"].shape == (14, 4)


def test_one_neighbourhood_picture_per_attention_layer(karate, device):
    model, batch = on(device, NodeClassifier(34, 4).eval(), karate.split("val")[0])
    pictures = NodeClassification(4, image_node=33).images(model, batch)["neighbourhood_attention"]
    assert len(pictures) == 2 and all(p.dtype == torch.uint8 and p.shape == (320, 320, 3) for p in pictures)
    assert NodeClassification(4).images(on(device, NodeClassifier(34, 4, attention="none").eval()), batch) == {}
    with pytest.raises(ValueError, match="task.image_node=34, but the graph has 34 nodes"):
        NodeClassification(4, image_node=34).images(model, batch)


def test_coefficients_of_a_node_are_its_incoming_edges_averaged_over_heads():
    edge_index = torch.tensor([[1, 2, 0, 0, 2], [0, 0, 0, 1, 2]])
    alpha = torch.tensor([[0.2, 0.4], [0.5, 0.1], [0.3, 0.5], [1.0, 1.0], [1.0, 1.0]])
    sources, coefficients = node_coefficients(edge_index, alpha, 0)
    assert sources.tolist() == [1, 2, 0]
    torch.testing.assert_close(coefficients, torch.tensor([0.3, 0.3, 0.4]))


def colour_of(value: float, scale: float) -> torch.Tensor:
    """The colour map's colour of ``value`` on the scale 0 -> ``scale`` (independent of the drawing)."""
    return heatmap(torch.tensor([[0.0, scale, value]]), min_side=1)[0, 2]


def colours_near(image: torch.Tensor, x: float, y: float) -> set[tuple[int, ...]]:
    return {tuple(image[round(y) + dy, round(x) + dx].tolist()) for dy in (-1, 0, 1) for dx in (-1, 0, 1)}


def test_edges_are_coloured_by_coefficient_strongest_at_the_top():
    """Neighbours in decreasing order clockwise from the top: 5 (0.6) above the centre, 9 (0.2) at
    30 degrees below the right, 3 (0.1) at 150 degrees; each edge in its coefficient's colour on
    the scale 0 -> 0.6, and the ring of the centre in the colour of its self coefficient."""
    image = draw_neighbourhood(7, torch.tensor([3, 5, 7, 9]), torch.tensor([0.1, 0.6, 0.15, 0.2]), size=320)
    centre, along = 160, 60  # a point on each edge, 60 pixels from the centre
    assert tuple(colour_of(0.6, 0.6).tolist()) in colours_near(image, centre, centre - along)
    for angle, value in ((30, 0.2), (150, 0.1)):
        x, y = centre + along * math.cos(math.radians(angle)), centre + along * math.sin(math.radians(angle))
        near = colours_near(image, x, y)
        assert tuple(colour_of(value, 0.6).tolist()) in near and tuple(colour_of(0.6, 0.6).tolist()) not in near
    assert tuple(image[centre, centre + 12].tolist()) == tuple(colour_of(0.15, 0.6).tolist())
