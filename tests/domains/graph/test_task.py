"""Node classification: scored nodes only, predictions, and the neighbourhood-attention picture."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from domains.graph import KarateClubData, NodeClassification, NodeClassifier
from domains.graph.pictures import draw_neighbourhood, node_coefficients
from tests.conftest import on
from tests.image_logger import colour_bars, readable


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
    assert len(pictures) == 2
    for fig in pictures:
        readable(fig)
        neighbours = int(((batch.edge_index[1] == 33) & (batch.edge_index[0] != 33)).sum())
        assert sum(1 for text in fig.axes[0].texts if "\n" in text.get_text()) == neighbours  # one label each
    assert NodeClassification(4).images(on(device, NodeClassifier(34, 4, attention="none").eval()), batch) == {}
    with pytest.raises(ValueError, match="task.image_node=34, but the graph has 34 nodes"):
        NodeClassification(4, image_node=34).images(model, batch)


def test_coefficients_of_a_node_are_its_incoming_edges_averaged_over_heads():
    edge_index = torch.tensor([[1, 2, 0, 0, 2], [0, 0, 0, 1, 2]])
    alpha = torch.tensor([[0.2, 0.4], [0.5, 0.1], [0.3, 0.5], [1.0, 1.0], [1.0, 1.0]])
    sources, coefficients = node_coefficients(edge_index, alpha, 0)
    assert sources.tolist() == [1, 2, 0]
    torch.testing.assert_close(coefficients, torch.tensor([0.3, 0.3, 0.4]))


def test_edges_are_coloured_by_coefficient_strongest_at_the_top():
    """Neighbours in decreasing order clockwise from the top: 5 (0.6) above the centre, 9 (0.2) at
    30 degrees below the right, 3 (0.1) at 150 degrees; each edge in its coefficient's colour on
    the colour bar's scale 0 -> 0.6, wider the larger it is, and the centre in the colour of its
    self coefficient."""
    fig = draw_neighbourhood(7, torch.tensor([3, 5, 7, 9]), torch.tensor([0.1, 0.6, 0.15, 0.2]), "node 7")
    readable(fig)
    ax, (bar,) = fig.axes[0], colour_bars(fig)
    assert (bar.norm.vmin, bar.norm.vmax) == (0.0, pytest.approx(0.6))
    edges = {(round(line.get_xdata()[1], 3), round(line.get_ydata()[1], 3)): line for line in ax.lines}
    for angle, value in ((90, 0.6), (-30, 0.2), (-150, 0.1)):
        line = edges[(round(math.cos(math.radians(angle)), 3), round(math.sin(math.radians(angle)), 3))]
        assert line.get_color() == bar.cmap(bar.norm(value)), angle
        assert line.get_linewidth() == pytest.approx(1 + 6 * value / 0.6)
    centre = ax.collections[-1]
    assert tuple(centre.get_offsets()[0]) == (0, 0)
    assert centre.get_facecolor()[0] == pytest.approx(bar.cmap(bar.norm(0.15)), abs=0.01)  # 256 colours: a step apart
