"""Semantic segmentation: per-pixel cross-entropy with CCNet's auxiliary loss, mIoU and pixel accuracy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassJaccardIndex

from framework.attention import capture
from framework.tasks import Task, call_model, split_batch

from .models import SegmentationOutput
from .data.palettes import as_palette, voc_palette
from .pictures import masks, pixel_attention


def _logits(output: Any) -> tuple[Tensor, Tensor | None]:
    """(logits, aux logits or None) of a model's output: a SegmentationOutput or bare logits."""
    if isinstance(output, SegmentationOutput):
        return output.logits, output.aux
    return output, None


class Segmentation(Task):
    """Labels per pixel: loss = CE(logits, y) + aux_weight * CE(aux logits, y), pixels equal to
    ``ignore_index`` excluded from both and from the metrics.

    Metrics: ``miou`` (mean over classes of TP / (TP + FP + FN), accumulated over the whole
    split) and ``pixel_acc`` (correct labelled pixels / labelled pixels). The best checkpoint
    is the one with the highest ``val/miou``.

    Pictures (``images``): for the first ``num_images`` examples, the image, the truth and the
    prediction side by side; and the attention of the feature pixel at relative position
    ``pixel`` (row, column in [0, 1]) in every block whose weights relate pixels (criss-cross,
    non-local, DANet position), drawn beside the image.

    Args:
        num_classes: K.
        ignore_index: the label of unlabelled pixels (255 in VOC, Cityscapes and our CamVid reader).
        aux_weight: weight of the auxiliary loss (CCNet and PSPNet: 0.4).
        num_images: examples drawn per picture.
        pixel: the query pixel of the attention pictures, as fractions of height and width.
        palette: K RGB colours of the classes in the pictures (default: Pascal VOC's colour map,
            which the digit scenes use too).

    Shapes: batch (image (B, C, H, W), target (B, H, W) long); model output logits (B, K, H, W)
    or a SegmentationOutput; ``predict`` gives label maps (B, H, W).
    """

    monitor = "val/miou"
    mode = "max"

    def __init__(self, num_classes: int, ignore_index: int = 255, aux_weight: float = 0.4, num_images: int = 4,
                 pixel: Sequence[float] = (0.5, 0.5), palette: Optional[Sequence[Sequence[int]]] = None) -> None:
        super().__init__()
        if num_classes < 2:
            raise ValueError(f"task.num_classes must be at least 2, got {num_classes}")
        if len(pixel) != 2 or not all(0 <= p <= 1 for p in pixel):
            raise ValueError(f"task.pixel must be (row, column) fractions in [0, 1], got {list(pixel)}")
        self.num_classes, self.ignore_index, self.aux_weight = num_classes, ignore_index, aux_weight
        self.num_images, self.pixel = num_images, tuple(pixel)
        if palette is not None and len(palette) != num_classes:
            raise ValueError(f"task.palette must give {num_classes} colours (task.num_classes), got {len(palette)}")
        self.colours = as_palette(palette) if palette is not None else voc_palette(num_classes)

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        logits, aux = _logits(output)
        if logits.shape[1] != self.num_classes:
            raise ValueError(f"segmentation: the model gives {logits.shape[1]} classes but task.num_classes={self.num_classes}")
        if logits.shape[-2:] != target.shape[-2:]:
            raise ValueError(f"segmentation: logits are {tuple(logits.shape[-2:])} but the target mask is {tuple(target.shape[-2:])}")
        loss = F.cross_entropy(logits, target, ignore_index=self.ignore_index)
        if aux is None or not self.aux_weight:
            return loss, {}
        aux_loss = F.cross_entropy(aux, target, ignore_index=self.ignore_index)
        return loss + self.aux_weight * aux_loss, {"aux_loss": aux_loss.detach()}

    def preds(self, output: Any) -> Tensor:
        return _logits(output)[0]

    def metrics(self) -> MetricCollection:
        options = dict(num_classes=self.num_classes, ignore_index=self.ignore_index)
        return MetricCollection({"miou": MulticlassJaccardIndex(average="macro", **options),
                                 "pixel_acc": MulticlassAccuracy(average="micro", **options)})

    def predict(self, model: nn.Module, batch: Any) -> Tensor:
        """Label maps (B, H, W)."""
        return super().predict(model, batch).argmax(1)

    def write_predictions(self, prediction: Tensor, batch: Any, sink: Any) -> None:
        """``masks/<example>.png``: one paletted PNG per image whose pixel values are the predicted
        labels (the colours are the task's palette), numbered in the order of the split."""
        for index, mask in zip(sink.take(len(prediction)), prediction.cpu().numpy()):
            sink.image(f"masks/{index:06d}.png", mask, palette=self.colours.numpy())

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        inputs, target = split_batch(batch)
        inputs, target = inputs[: self.num_images], target[: self.num_images]
        with capture(model) as maps:
            prediction = _logits(call_model(model, inputs))[0].argmax(1)
        pictures = {"masks": [masks(x, t, p, self.colours, self.ignore_index) for x, t, p in zip(inputs, target, prediction)]}
        modules = dict(model.named_modules())
        for name, records in maps.items():
            drawn = pixel_attention(modules[name], records[-1], inputs, self.pixel)
            if drawn:
                pictures[f"pixel_attention/{name}"] = drawn
        return pictures
