"""The vision domain's evaluation hooks: the digit scenes' gold (drawn digits, hidden tiles), a
tile pixel's decision, the key pixels as items, and the pixel blocks' views against the gold."""

from __future__ import annotations

import pytest
import torch

from domains.vision import Segmentation, SegmentationNet
from domains.vision.data import DigitScenes
from domains.vision.data.scenes import gold_masks

SMALL = dict(backbone="resnet18", channels=[16, 32, 64, 128], stem_width=16)


@pytest.fixture(scope="module")
def scenes():
    return DigitScenes(train_size=8, val_size=8, test_size=4, batch_size=4)


def test_gold_masks_are_the_drawn_ink_and_the_tiles(scenes):
    drawn = scenes.scenes("test")
    gold = gold_masks(drawn)
    assert gold.shape == (4, 2, 64, 64) and not (gold[:, 0] & gold[:, 1]).any()
    assert torch.equal(gold[:, 0] | gold[:, 1], drawn.masks > 0)
    for i in range(4):
        for k in range(drawn.size.shape[1]):
            s, top, left = (int(t[i, k]) for t in (drawn.size, drawn.top, drawn.left))
            square = gold[i, 1, top:top + s, left:left + s]
            assert square.all() if drawn.occluded[i, k] else not square.any()
    image, target, batch_gold = next(iter(scenes.evaluation_dataloader()))
    assert torch.equal(batch_gold, gold) and image.shape == (4, 3, 64, 64)


@pytest.mark.parametrize("attention", ["criss_cross", "non_local", "danet"])
def test_a_tile_pixel_looks_over_the_key_pixels(scenes, attention):
    batch = next(iter(scenes.evaluation_dataloader()))
    model, task = SegmentationNet(11, attention=attention, **SMALL).eval(), Segmentation(11)
    pixels = task.query_pixels(batch)
    assert batch[2][torch.arange(4), 1, pixels[:, 0], pixels[:, 1]].all(), "the tested pixel lies in a tile"
    items = task.item_attention(model, batch)
    assert items.weights.shape == (4, 64) and torch.allclose(items.weights.sum(-1), torch.ones(4), atol=1e-5)
    forward = task.item_forward(model, batch)
    logits = task.decision(model, batch)
    assert forward.vectors.shape[:2] == (4, 64)
    assert torch.allclose(forward.forward(forward.vectors), logits, atol=1e-4)
    views = task.gold_views(model, batch)
    names = [v.name for v in views]
    assert names == (["head.attention pass 1", "head.attention pass 2", "head.attention passes composed"]
                     if attention == "criss_cross" else ["head.attention"])
    assert views[0].queries.any() and views[0].gold.any()
    assert task.gold_views(model, batch[:2]) == [], "batches without gold have no views"
    step = task.step(model, batch, "test")  # a batch with gold still tests as usual: label maps for the metrics
    assert torch.equal(step.preds, task.run_model(model, task.split(batch)[0]).logits.argmax(1))
