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
            square = gold[i, 1, top : top + s, left : left + s]
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
    assert names == (
        ["head.attention pass 1", "head.attention pass 2", "head.attention passes composed"]
        if attention == "criss_cross"
        else ["head.attention"]
    )
    assert views[0].queries.any() and views[0].gold.any()
    assert task.gold_views(model, batch[:2]) == [], "batches without gold have no views"
    step = task.step(model, batch, "test")  # a batch with gold still tests as usual: label maps for the metrics
    assert torch.equal(step.preds, task.run_model(model, task.split(batch)[0]).logits.argmax(1))


def test_scenes_with_gold_carry_it_in_every_split():
    data = DigitScenes(train_size=8, val_size=4, test_size=4, batch_size=4, gold=True)
    data.setup("fit")
    assert data.gold_evidence and not DigitScenes(train_size=8, val_size=4, test_size=4).gold_evidence
    for loader in (data.train_dataloader(), data.val_dataloader()):
        image, target, gold = next(iter(loader))
        assert gold.shape == (4, 2, 64, 64) and torch.equal(gold[:, 0] | gold[:, 1], target > 0)


def _pooled(mask, grid):
    """Naive pooling of (B, S, S) bool onto a (h, w) grid: each cell's share of True pixels (B, h w)."""
    (h, w), side = grid, mask.shape[-1]
    return torch.stack(
        [
            mask[:, i * side // h : (i + 1) * side // h, j * side // w : (j + 1) * side // w].float().mean((1, 2))
            for i in range(h)
            for j in range(w)
        ],
        1,
    )


def test_the_segmentation_families_losses_by_hand(scenes):
    """Supervision adds lambda x CE of a tile pixel's non-local weights against the key pixels
    that hold drawn ink, decoupling mu x -log(1 - m); a loop over the tile pixels gives both."""
    import math

    from framework.attention import capture

    batch = next(iter(scenes.evaluation_dataloader()))
    torch.manual_seed(0)
    model = SegmentationNet(11, attention="non_local", **SMALL).eval()
    plain = Segmentation(11).step(model, batch, "train").loss.item()
    with capture(model, "head.attention") as maps:
        model(batch[0])
    record = maps["head.attention"][-1]
    weights = record.weights.float()
    while weights.dim() > 3:
        weights = weights.mean(1)
    gold, queries = _pooled(batch[2][:, 0], record.keys) > 0, _pooled(batch[2][:, 1], record.queries) >= 0.5
    supervision, decoupling = [], []
    for b, q in queries.nonzero().tolist():
        keys = gold[b].nonzero()[:, 0].tolist()
        if keys:
            supervision.append(-sum(math.log(weights[b, q, k]) for k in keys) / len(keys))
            decoupling.append(-math.log(1 - sum(float(weights[b, q, k]) for k in keys) + 1e-6))
    assert supervision, "the batch has tile pixels to score"
    supervision, decoupling = sum(supervision) / len(supervision), sum(decoupling) / len(decoupling)
    step = Segmentation(11, attention_supervision=0.5).step(model, batch, "train")
    assert step.loss.item() == pytest.approx(plain + 0.5 * supervision, rel=1e-4)
    assert step.logs["attention_loss"].item() == pytest.approx(supervision, rel=1e-4)
    step = Segmentation(11, decouple_attention=2.0).step(model, batch, "train")
    assert step.loss.item() == pytest.approx(plain + 2.0 * decoupling, rel=1e-4)
    assert set(step.logs) == {"decoupling_loss"}  # (the auxiliary head is off in eval mode)
    step.loss.backward()
    assert model.head.attention.theta.weight.grad.abs().sum() > 0, "the loss reaches the attention's parameters"
    without = Segmentation(11, attention_supervision=0.5).step(model, batch[:2], "train")
    assert without.loss.item() == pytest.approx(plain, rel=1e-6), "a batch without gold trains on the task alone"


def test_random_segmentation_attention_and_bad_options(scenes):
    batch = next(iter(scenes.evaluation_dataloader()))
    model, task = SegmentationNet(11, attention="non_local", **SMALL).eval(), Segmentation(11, random_attention=True)
    task.check(model, scenes)
    assert {m.ablation for m in model.modules() if hasattr(m, "block_name")} == {"random"}
    assert not torch.allclose(task.item_attention(model, batch).weights, task.item_attention(model, batch).weights)
    with pytest.raises(
        ValueError,
        match=r"task.attention_supervision=1.0 needs batches with gold attention .*data.gold=true"
        r"\); DigitScenes has none: set them to 0$",
    ):
        Segmentation(11, attention_supervision=1.0).check(model, scenes)
    with pytest.raises(ValueError, match="task.random_attention=true draws the weights at random: it takes no"):
        Segmentation(11, decouple_attention=1.0, random_attention=True)
    with pytest.raises(ValueError, match="task.decouple_attention=1.0 needs a model with a block that relates pixels"):
        Segmentation(11, decouple_attention=1.0).step(SegmentationNet(11, attention="none", **SMALL), batch, "train")


def test_gold_batches_and_a_model_whose_blocks_relate_no_pixels_are_refused(scenes):
    """CBAM gates channels and pixels but relates no pixel to another: a supervised step on a
    batch with gold says so rather than training without supervision."""
    batch = next(iter(scenes.evaluation_dataloader()))
    model = SegmentationNet(11, attention="cbam", **SMALL).eval()
    with pytest.raises(ValueError, match=r"needs a model with a block that relates pixels; SegmentationNet has none"):
        Segmentation(11, attention_supervision=0.5).step(model, batch, "train")
