"""The segmentation task against naive formulas: loss with the ignore index and the auxiliary
term, mIoU and pixel accuracy from a confusion matrix, and the pictures."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from domains.vision.data.palettes import voc_palette
from domains.vision.models import SegmentationNet, SegmentationOutput
from domains.vision.task import Segmentation
from framework.attention import capture, create
from tests.conftest import on
from tests.image_logger import colour_bars, readable

K, IGNORE = 4, 255


def _batch(seed, n=3, h=6, w=5):
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(K, (n, h, w), generator=g)
    target[torch.rand(n, h, w, generator=g) < 0.2] = IGNORE
    return torch.randn(n, K, h, w, generator=g), target


def test_loss_ignores_unlabelled_pixels_and_weights_the_auxiliary_head():
    (logits, target), (aux, _) = _batch(0), _batch(1)
    task = Segmentation(K, aux_weight=0.4)
    keep = target != IGNORE
    naive = lambda z: -(z.log_softmax(1).gather(1, target.clamp(max=K - 1)[:, None])[:, 0][keep]).mean()
    assert torch.allclose(task.losses(logits, target)[0], naive(logits))
    assert torch.allclose(task.losses(SegmentationOutput(logits, aux), target)[0], naive(logits) + 0.4 * naive(aux))
    with pytest.raises(ValueError, match="task.num_classes=5"):
        Segmentation(5).losses(logits, target)


def test_miou_and_pixel_accuracy_match_a_confusion_matrix_over_batches():
    task = Segmentation(K)
    metrics = task.metrics()
    confusion = torch.zeros(K, K)
    for seed in range(3):
        logits, target = _batch(seed)
        metrics.update(logits, target)
        keep = target != IGNORE
        pred = logits.argmax(1)
        confusion += torch.bincount(target[keep] * K + pred[keep], minlength=K * K).view(K, K).float()
    tp = confusion.diag()
    iou = tp / (confusion.sum(0) + confusion.sum(1) - tp)
    result = metrics.compute()
    assert torch.allclose(result["miou"], iou.mean()) and torch.allclose(
        result["pixel_acc"], tp.sum() / confusion.sum()
    )


@pytest.mark.parametrize("sub_sample, keys", [(False, (4, 5)), (True, (2, 2))])
def test_a_non_local_record_knows_its_grids_and_where_a_pixel_looks(sub_sample, keys):
    torch.manual_seed(0)
    block = create("non_local", 6, sub_sample=sub_sample).eval()
    x = torch.randn(2, 6, 4, 5)
    with capture(block) as maps:
        block(x)
    (record,) = maps["non_local"]
    assert (record.queries, record.keys) == ((4, 5), keys)
    q, k = block.theta(x).flatten(2), block.pool(block.phi(x)).flatten(2)  # (B, C', hw), (B, C', h'w')
    i, j = 2, 3
    expected = torch.softmax(torch.einsum("bc,bcn->bn", q[:, :, i * 5 + j], k), dim=-1).view(2, *keys)
    assert torch.allclose(block.looks(record, (i, j)), expected, atol=1e-6)


def test_pictures_show_masks_and_where_the_chosen_pixel_looks(device):
    torch.manual_seed(0)
    model = SegmentationNet(K, attention="criss_cross", backbone="resnet18", channels=(8, 16, 32, 64), stem_width=8)
    image, target = torch.randn(2, 3, 32, 40), torch.randint(K, (2, 32, 40))
    task = Segmentation(K, num_images=1, pixel=(0.25, 0.5))
    names = ["road", "sky", "car", "tree"][:K]
    task.check(model, SimpleNamespace(class_names=names))  # the data's class names, for the colour bar
    with torch.no_grad():
        pictures = task.images(*on(device, model.eval(), (image, target)))
    (masks,) = pictures["masks"]
    readable(masks)
    image, truth, prediction = masks.axes[:3]
    assert [ax.get_title() for ax in (image, truth, prediction)] == ["image", "true classes", "predicted classes"]
    assert (truth.images[0].get_array() == target[0].numpy()).all()
    (bar,) = colour_bars(masks)
    assert list(bar.get_ticks()) == list(range(K)) and bar.ax.get_ylabel() == "class"
    assert [label.get_text() for label in bar.ax.get_yticklabels()] == names, "the classes named"
    palette = voc_palette(K).numpy() / 255
    assert all((truth.images[0].cmap(k)[:3] == palette[k]).all() for k in range(K)), "each class in its colour"
    (attention,) = pictures["pixel_attention/head.attention"]
    readable(attention)
    left, right = attention.axes[:2]
    assert right.images[0].get_extent() == [-0.5, 39.5, 31.5, -0.5] and right.lines[0].get_xdata()[0] == 20
    heat = right.images[0].get_array()
    # Query: feature pixel (1, 2) of the 4 x 5 map. Criss-cross weights live on its row and column;
    # elsewhere all are 0.
    assert heat.shape == (4, 5) and heat[1].min() > 0 and heat[:, 2].min() > 0
    assert heat[[0, 2, 3]][:, [0, 1, 3, 4]].max() == 0
    with pytest.raises(ValueError, match="task.pixel"):
        Segmentation(K, pixel=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="task.palette must give 4 colours"):
        Segmentation(K, palette=[[0, 0, 0]])
