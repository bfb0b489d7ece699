"""The picture kit: every picture is a matplotlib figure a reader can read (size, named axes, a
colour bar, a caption), padding is drawn as no key rather than as weight 0, and the loggers get
(H, W, 3) uint8 arrays, whatever the device of the inputs."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch

from framework.attention import available, capture, create, info
from framework.commands.compare import grid, plots, results
from framework.evaluation.rollout import rollout_picture
from framework.pictures import MIN_SIDE, NOT_A_KEY, WEIGHTS, as_image, heatmap, heatmaps, overlay
from tests.attention.cases import case
from tests.image_logger import colour_bars, readable

VIRIDIS_LOW = np.round(np.array(matplotlib.colormaps[WEIGHTS](0.0)[:3]) * 255)


def pixel(fig, ax, image: np.ndarray, x: float, y: float) -> np.ndarray:
    """The colour drawn at data point (x, y) of ``ax`` (matplotlib's display y runs upwards)."""
    column, row = ax.transData.transform((x, y))
    return image[int(round(fig.bbox.height - row)), int(round(column))].astype(float)


def test_a_heat_map_names_its_axes_and_hatches_padding_instead_of_drawing_zero(device):
    weights = torch.tensor([[0.0, 0.7, 0.3, 0.0], [0.5, 0.5, 0.0, 0.0]], device=device)
    fig = heatmap(
        weights,
        rows="query position",
        columns="key position",
        valid_columns=torch.tensor([1, 1, 1, 0]),
        row_labels=["a", "b"],
        column_labels=["w", "x", "y", "z"],
        caption_text="example 1, layer 0",
    )
    image = readable(fig)
    assert min(image.shape[:2]) >= MIN_SIDE
    ax, (bar,) = fig.axes[0], colour_bars(fig)
    assert (ax.get_xlabel(), ax.get_ylabel(), bar.ax.get_ylabel()) == (
        "key position",
        "query position",
        "attention weight",
    )
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "w",
        "x",
        "y",
        "z",
    ] and fig._suptitle.get_text() == "example 1, layer 0"
    drawn = ax.images[0].get_array()
    assert drawn.mask[:, 3].all() and not drawn.mask[:, :3].any(), "the padded key is masked, the others are not"
    assert (bar.norm.vmin, bar.norm.vmax) == (0.0, pytest.approx(0.7))
    zero, padded = pixel(fig, ax, image, 0, 0), pixel(fig, ax, image, 3, 0)
    assert np.abs(zero - VIRIDIS_LOW).max() <= 2, "a real weight of 0 takes the colour map's 0"
    assert np.abs(padded - VIRIDIS_LOW).max() > 60 and padded.max() - padded.min() <= 2, "padding is grey, not 0"
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts == [NOT_A_KEY]
    assert not heatmap(weights, rows="q", columns="k", caption_text="no padding").legends


def test_long_axes_get_numbered_ticks_and_the_figure_grows_with_the_map():
    small = heatmap(torch.rand(3, 3), rows="q", columns="k", caption_text="small")
    large = heatmap(torch.rand(64, 64), rows="q", columns="k", caption_text="large")
    assert [t.get_text() for t in small.axes[0].get_yticklabels()] == ["0", "1", "2"]
    assert len(large.axes[0].get_xticks()) < 20, "64 positions are not 64 labels"
    assert large.get_size_inches().min() > small.get_size_inches().min() and readable(large).shape[0] >= 640


def test_an_overlay_stretches_the_weights_over_the_image_and_marks_the_query(device):
    image = torch.zeros(3, 16, 24, device=device)
    weights = torch.zeros(2, 3, device=device)
    weights[1, 2] = 1.0
    fig = overlay(image, weights, (4, 10), caption_text="where pixel (4, 10) looks")
    readable(fig)
    left, right = fig.axes[:2]
    assert right.images[0].get_extent() == [-0.5, 23.5, 15.5, -0.5], "key cells cover the image's pixels"
    for ax in (left, right):
        (marker,) = ax.lines
        assert (marker.get_xdata()[0], marker.get_ydata()[0]) == (10, 4)
    assert "2 key rows" in right.get_ylabel() and "3 key columns" in right.get_xlabel()


def test_panels_side_by_side_have_a_colour_bar_each():
    fig = heatmaps(
        [("attention", torch.rand(2, 5), "attention weight"), ("gold", torch.eye(2, 5), "gold weight")],
        rows="query",
        columns="key",
        valid=torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]).bool(),
        caption_text="a view",
    )
    readable(fig, bars=2)
    assert [bar.ax.get_ylabel() for bar in colour_bars(fig)] == ["attention weight", "gold weight"]
    assert fig.axes[0].images[0].get_array().mask.sum() == 3


def test_as_image_gives_the_loggers_uint8_arrays(device):
    fig = heatmap(torch.rand(4, 4, device=device), rows="q", columns="k", caption_text="c")
    image = as_image(fig)
    assert image.dtype == np.uint8 and image.shape == (*(fig.get_size_inches()[::-1] * fig.dpi).round().astype(int), 3)
    tensor = torch.zeros(5, 6, 3, dtype=torch.uint8, device=device)
    assert isinstance(as_image(tensor), np.ndarray) and as_image(tensor).shape == (5, 6, 3)


def test_a_block_draws_its_record_with_named_axes_and_its_padding_hatched():
    torch.manual_seed(0)
    block = create("mhsa", 8, num_heads=2).eval()
    mask = torch.tensor([[True, True, True, False, False]])
    with torch.no_grad(), capture(block) as maps:
        block(torch.randn(1, 5, 8), mask)
    fig = block.weights_picture(maps["mhsa"][0], "example 1, layer 0")
    readable(fig)
    ax = fig.axes[0]
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("query position", "key position")
    assert "mean of 2 heads" in fig._suptitle.get_text() and "example 1, layer 0" in fig._suptitle.get_text()
    masked = ax.images[0].get_array().mask
    assert masked[:, 3:].all() and masked[3:].all() and not masked[:3, :3].any(), "padded keys and their query rows"
    unpadded = create("mhsa", 8, num_heads=2).eval()
    with torch.no_grad(), capture(unpadded) as maps:
        unpadded(torch.randn(1, 5, 8))
    assert not np.ma.is_masked(unpadded.weights_picture(maps["mhsa"][0]).axes[0].images[0].get_array())


@pytest.mark.parametrize("probes", [None, 64, 3])  # a full record; every query's probe row; some queries' rows
def test_a_causal_block_hatches_the_keys_after_each_query_as_masked_not_as_learned_zeros(probes):
    torch.manual_seed(0)
    block = create("mhsa", 8, num_heads=2, causal=True).eval()
    padding = torch.tensor([[True] * 5 + [False]])
    with torch.no_grad(), capture(block, probes=probes) as maps:
        block(torch.randn(1, 6, 8), padding)
    record = maps["mhsa"][0]
    fig = block.weights_picture(record, "example 1")
    readable(fig)
    allowed = torch.ones(6, 6).tril().bool() & padding[0] & padding[0, :, None]  # causal, the padded key and query
    rows = record.probes if record.probes is not None else torch.arange(6)
    masked = fig.axes[0].images[0].get_array().mask
    assert (masked == ~allowed[rows].numpy()).all(), "the upper triangle and the padding, and nothing else"
    assert "causal" in fig._suptitle.get_text() and [t.get_text() for t in fig.legends[0].get_texts()] == [NOT_A_KEY]


def test_a_decoders_steps_are_one_map_of_calls_by_keys_with_keys_a_call_lacks_hatched():
    torch.manual_seed(0)
    block = create("additive", 8).eval()
    with torch.no_grad(), capture(block) as maps:
        for keys in (6, 6, 4):  # three steps, the last over fewer keys
            block(torch.randn(1, 1, 8), torch.randn(1, keys, 8))
    (fig,) = block.calls_picture(maps["additive"], "example 1")
    readable(fig)
    ax = fig.axes[0]
    drawn = ax.images[0].get_array()
    assert drawn.shape == (3, 6) and (ax.get_ylabel(), ax.get_xlabel()) == ("call (step)", "key position")
    assert drawn.mask[2, 4:].all() and not drawn.mask[:2].any() and not drawn.mask[2, :4].any()
    np.testing.assert_allclose(drawn.data[0], maps["additive"][0].weights[0].reshape(-1).numpy(), atol=1e-6)
    assert "one row per call (3 calls)" in fig._suptitle.get_text()
    assert len(block.calls_picture(maps["additive"][:1], "one call")) == 1


def test_a_pixel_block_draws_where_its_middle_query_looks_and_gates_draw_rows_and_columns():
    torch.manual_seed(0)
    block = create("criss_cross", 8).eval()
    with torch.no_grad(), capture(block) as maps:
        block(torch.randn(1, 8, 5, 6))
    fig = block.weights_picture(maps["criss_cross"][0], "example 1")
    readable(fig)
    ax = fig.axes[0]
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("key row", "key column") and ax.images[0].get_array().shape == (5, 6)
    assert "query pixel (2, 3) of 5 x 6" in fig._suptitle.get_text()
    cbam = create("cbam", 8).eval()
    with torch.no_grad(), capture(cbam) as maps:
        cbam(torch.randn(1, 8, 5, 6))
    gate = cbam.weights_picture(maps["cbam"][0], "example 1")
    readable(gate)
    assert (gate.axes[0].get_ylabel(), gate.axes[0].get_xlabel()) == ("row", "column")


def test_the_rollout_picture_hatches_the_padding_of_both_maps():
    last = torch.tensor([[[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.6, 0.4, 0.0]]])
    fig = rollout_picture(last, last, "encoder.layers.*.attention")
    readable(fig, bars=2)
    for ax in fig.axes[:2]:
        masked = ax.images[0].get_array().mask
        assert masked[2].all() and masked[:, 2].all() and not masked[:2, :2].any()
    assert "encoder.layers.*.attention" in fig._suptitle.get_text()


def test_one_epoch_of_learning_curves_is_drawn_as_dots():
    cell = grid.cells([])[0]
    fit = {
        "status": "finished",
        "monitor": "val/acc",
        "mode": "max",
        "best_score": 0.5,
        "history": [{"epoch": 0, "val/acc": 0.5, "val/loss": 1.0}],
        "train_history": [{"epoch": 0, "train/loss": 2.0}],
    }
    record = results.Record(cell, 0, Path("."), fit, {"status": "finished", "metrics": {"test/acc": 0.5}})
    summary = results.summarize("one_epoch", grid.cells([]), {cell.name: [record]}, [], [0], [])
    fig = plots.curves_figure(summary)
    image = as_image(fig)
    for ax, value in zip(fig.axes, (0.5, 1.0, 2.0)):
        (line,) = ax.lines
        assert line.get_marker() == "o" and list(line.get_xdata()) == [1]
        assert np.abs(pixel(fig, ax, image, 1, value) - np.array([31, 119, 180])).max() <= 3, "a tab:blue dot"
    assert min(image.shape[:2]) >= MIN_SIDE and fig.axes[0].get_xlabel() == "epoch"


@pytest.mark.parametrize("name", available())
@pytest.mark.slow
def test_every_block_draws_its_records_as_readable_pictures_or_none(name):
    """What the attention_maps callback logs for each block of the catalogue, on its typical inputs."""
    torch.manual_seed(0)
    block, args, kwargs = case(name)
    with torch.no_grad(), capture(block.eval()) as maps:
        block(*args, **kwargs)
    pictures = [block.weights_picture(record, f"{name}, example 1") for records in maps.values() for record in records]
    for fig in pictures:
        if fig is not None:
            readable(fig)
            assert name in fig._suptitle.get_text()
    assert any(pictures) == (info(name).kind != "graph"), "every block but the graph ones draws a map"
