"""The drawing process rasterises the pictures while training goes on: the same pixels as drawing them
here, nothing lost when it cannot (a figure that does not pickle, the process killed), and the
``attention_maps`` callback logs them at the step of the validation that drew them."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch
from matplotlib.ticker import FuncFormatter

from domains.demo import AssociativeRecall, SequenceClassification, SequenceClassifier
from framework.drawing import Drawer, rasterise
from framework.pictures import HEADER, Gathered, Sketch, as_image, heatmap, heatmaps, overlay, sketching
from tests.image_logger import fit_logging_pictures, one_image_per_key_per_validation


def pictures() -> list:
    torch.manual_seed(0)
    weights = torch.rand(6, 9).softmax(-1)
    return [
        heatmap(weights, rows="query", columns="key", valid_columns=torch.arange(9) < 7, caption_text="one map"),
        heatmaps(
            [("attention", weights, "weight"), ("gold", (weights > 0.12).float(), "gold")],
            rows="query",
            columns="key",
            caption_text="two panels",
        ),
    ]


def small_recall() -> AssociativeRecall:
    return AssociativeRecall(train_size=64, val_size=32, test_size=32, batch_size=32)


@pytest.fixture
def drawer():
    drawer = Drawer()
    yield drawer
    drawer.close()


@pytest.mark.slow
def test_the_drawing_process_gives_the_pixels_this_process_draws(drawer):
    job = drawer.submit(pictures())
    images = job.images(timeout=60)
    assert job.by_process, "drawn by the drawing process, not here"
    expected = [rasterise(figure) for figure in pictures()]
    assert len(images) == 2 and all(image.dtype == np.uint8 and image.shape[2] == 3 for image in images)
    for got, want in zip(images, expected):
        np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_the_drawing_processs_cpu_time_is_counted_from_its_start(drawer):
    assert drawer.cpu_seconds() == 0.0, "no process yet"
    drawer.submit(pictures()).images(timeout=60)
    assert drawer.cpu_seconds() > 0.05, "it imported matplotlib and drew two pictures"


@pytest.mark.slow
def test_a_figure_that_does_not_pickle_is_drawn_here(drawer):
    def unpicklable():
        figure = pictures()[0]
        figure.axes[0].xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"k{x:.0f}"))  # a lambda does not pickle
        return figure

    with pytest.warns(RuntimeWarning, match="pictures that do not pickle are drawn in the training process"):
        job = drawer.submit([unpicklable()])
    assert job.done() and not job.by_process
    np.testing.assert_array_equal(job.images()[0], rasterise(unpicklable()))


@pytest.mark.slow
def test_jobs_of_a_killed_drawing_process_are_drawn_here_and_it_is_said_once(drawer):
    drawer.submit(pictures()).images(timeout=60)  # started and working
    with pytest.warns(RuntimeWarning, match="drawing process of the pictures failed: it ended with status -9"):
        os.kill(drawer._process.pid, signal.SIGKILL)
        job = drawer.submit(pictures())
        images = job.images(timeout=60)
    assert not job.by_process and len(images) == 2
    later = drawer.submit(pictures())
    assert later.done() and not later.by_process, "after a failure, pictures are drawn here without waiting"


@pytest.mark.slow
def test_a_closed_drawer_starts_a_new_process_for_the_next_pictures(drawer):
    drawer.submit(pictures()[:1]).images(timeout=60)
    first = drawer._process
    drawer.close()
    assert first.poll() == 0, "the process ends at the end of its input"
    job = drawer.submit(pictures()[:1])
    assert len(job.images(timeout=60)) == 1 and job.by_process and drawer._process is not first


@pytest.mark.slow
def test_within_sketching_a_picture_function_gives_its_call_with_its_tensors_on_the_cpu(device):
    torch.manual_seed(0)
    image, weights = torch.rand(3, 16, 24, device=device), torch.rand(4, 6, device=device, requires_grad=True)
    with sketching():
        sketch = overlay(image, weights * 2, (5, 7), caption_text="where pixel (5, 7) looks")
    assert isinstance(sketch, Sketch) and sketch.draw is overlay and sketch.kwargs["caption_text"].startswith("where")
    assert all(t.device.type == "cpu" and not t.requires_grad for t in sketch.args[:2])
    with sketching():
        one = overlay(torch.rand(64, 3, 16, 24, device=device)[5], weights, (5, 7))  # one example of a batch
    assert len(pickle.dumps(one)) < 3 * 16 * 24 * 4 + 20_000, "the example is copied, not its whole batch"
    direct = overlay(image, weights.detach() * 2, (5, 7), caption_text="where pixel (5, 7) looks")
    np.testing.assert_array_equal(as_image(sketch), as_image(direct))
    with sketching():
        assert hasattr(sketch.build(), "canvas"), "a sketch built within sketching() is drawn all the same"


@pytest.mark.slow
def test_the_drawing_process_builds_sketches_into_the_same_pixels(drawer):
    with sketching():
        sketches = pictures()
    job = drawer.submit(sketches)
    images = job.images(timeout=120)
    assert job.by_process and all(isinstance(s, Sketch) for s in sketches)
    for got, want in zip(images, [rasterise(figure) for figure in pictures()]):
        np.testing.assert_array_equal(got, want)


def test_the_drawing_module_imports_neither_torch_nor_lightning():
    code = "import sys, framework.drawing; print(sorted(m for m in ('torch', 'lightning') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_pictures_drawn_meanwhile_are_logged_at_the_step_of_their_validation(tmp_path):
    torch.manual_seed(0)
    logger = fit_logging_pictures(
        SequenceClassifier(177, 10, dim=16, depth=1), SequenceClassification(10), small_recall(), tmp_path, epochs=3
    )
    validations = [step for names, step in logger.metric_steps if "val/acc" in names]
    assert len(validations) == 3, "three validations"
    assert logger.steps == [("attention/encoder.layers.0.attention", step) for step in validations], (
        "each validation's picture logged once, in order, at the step of its metrics"
    )
    captions = [caption for _, _, _, (caption,) in logger.calls]
    assert captions == [
        f"attention/encoder.layers.0.attention, epoch {epoch} (step {step})" for epoch, step in enumerate(validations)
    ], "the epoch counted from 0, as W&B counts it"
    one_image_per_key_per_validation(logger)  # and one size across the three


class ArrayPictures(SequenceClassification):
    """A task whose pictures are arrays already (no figure to draw)."""

    def images(self, model, batch):
        return {"tokens": [np.full((4, 5, 3), 7, dtype=np.uint8)]}


def test_pictures_that_are_arrays_already_are_logged_as_they_are_under_their_header(tmp_path):
    logger = fit_logging_pictures(
        SequenceClassifier(177, 10, dim=16, depth=1, attention="none"), ArrayPictures(10), small_recall(), tmp_path
    )
    (image,) = logger.images["images/tokens"]
    assert image.shape == (HEADER + 4, 5, 3)
    np.testing.assert_array_equal(image[HEADER:], np.full((4, 5, 3), 7, dtype=np.uint8))


def test_a_keys_pictures_are_stacked_into_one_image_of_the_size_the_key_keeps(drawer):
    tiles = [rasterise(figure) for figure in pictures()]
    width = max(tile.shape[1] for tile in tiles)
    with sketching():
        gathered = Gathered(tuple(pictures()), "images/maps, epoch 0 (step 0)")
    (image,) = drawer.submit([gathered]).images(timeout=120)
    assert image.shape == (HEADER + tiles[0].shape[0] + tiles[1].shape[0], width, 3), "stacked under the header"
    np.testing.assert_array_equal(image[HEADER : HEADER + tiles[0].shape[0], : tiles[0].shape[1]], tiles[0])
    assert (image[HEADER : HEADER + tiles[0].shape[0], tiles[0].shape[1] :] == 255).all(), "padded white"
    assert (image[:HEADER] < 128).any(), "the header is written"
    for size in ((500, 600), (HEADER + 1300, 1500)):  # the key's size, smaller or larger than the stack
        (fitted,) = drawer.submit([Gathered(tuple(pictures()), "images/maps, epoch 1 (step 1)", size)]).images(120)
        assert fitted.shape == (*size, 3), "exactly the key's size"
        content = np.argwhere((fitted[HEADER:] < 250).any(-1))
        assert (content.max(0) >= np.array(size) - (HEADER + 40, 40)).all(), "laid out anew to fill it, not padded"
