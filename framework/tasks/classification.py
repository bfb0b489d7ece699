"""Classification: one label per example (sentence, image, clip, node ...)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

from .base import Task


class Classification(Task):
    """Cross-entropy on logits (B, K) against labels (B,); logs ``acc`` and macro ``f1``.

    Args:
        num_classes: K.
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
        ignore_index: labels with this value count in neither loss nor metrics.
    """

    monitor = "val/acc"
    mode = "max"

    def __init__(self, num_classes: int, label_smoothing: float = 0.0, ignore_index: int = -100) -> None:
        super().__init__()
        if num_classes < 2:
            raise ValueError(f"task.num_classes must be at least 2, got {num_classes}")
        self.num_classes, self.label_smoothing, self.ignore_index = num_classes, label_smoothing, ignore_index

    def losses(self, output: Tensor, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        if output.shape[-1] != self.num_classes:
            raise ValueError(
                f"classification: the model gives {output.shape[-1]} logits per example but "
                f"task.num_classes={self.num_classes}"
            )
        return F.cross_entropy(output, target, label_smoothing=self.label_smoothing, ignore_index=self.ignore_index), {}

    def metrics(self) -> MetricCollection:
        options = dict(num_classes=self.num_classes, ignore_index=self.ignore_index)
        return MetricCollection(
            {"acc": MulticlassAccuracy(average="micro", **options), "f1": MulticlassF1Score(average="macro", **options)}
        )
