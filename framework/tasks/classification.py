"""Classification: one label per example (sentence, image, clip, node ...)."""

from __future__ import annotations

from typing import Optional

import torch.nn.functional as F
from torch import Tensor
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

from ..data.sizes import require_sizes
from ..layers import counted_mean
from ..values import AnyInt, ClassCount, Fraction, NonNegativeFloat
from .attention_training import AttentionTraining
from .base import Task


class Classification(AttentionTraining, Task):
    """Cross-entropy on logits (B, K) against labels (B,); logs ``acc`` and macro ``f1``.

    Args:
        num_classes: K.
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
        ignore_index: labels with this value count in neither loss nor metrics (a batch of
            them only: a zero loss).
        attention_supervision, decouple_attention, random_attention: the attention-training
            families of :mod:`framework.tasks.attention_training`: random attention for any
            model with attention blocks; supervision and decoupling for the subclasses whose
            gold views train (the demo's read-out, HAN's semantic attention). Off by default.
    """

    monitor = "val/acc"

    def __init__(
        self,
        num_classes: Optional[ClassCount] = None,
        label_smoothing: Fraction = 0.0,
        ignore_index: AnyInt = -100,
        attention_supervision: NonNegativeFloat = 0.0,
        decouple_attention: NonNegativeFloat = 0.0,
        random_attention: bool = False,
    ) -> None:
        require_sizes("task", num_classes=num_classes)
        super().__init__()
        self.num_classes, self.label_smoothing, self.ignore_index = num_classes, label_smoothing, ignore_index
        self.attention_options(attention_supervision, decouple_attention, random_attention)

    def losses(self, logits: Tensor, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        if logits.shape[-1] != self.num_classes:
            raise ValueError(
                f"classification: the model gives {logits.shape[-1]} logits per example but "
                f"task.num_classes={self.num_classes}"
            )
        loss = counted_mean(F.cross_entropy, logits, target, self.ignore_index, label_smoothing=self.label_smoothing)
        return loss, {}

    def metrics(self) -> MetricCollection:
        options = dict(num_classes=self.num_classes, ignore_index=self.ignore_index)
        return MetricCollection(
            {"acc": MulticlassAccuracy(average="micro", **options), "f1": MulticlassF1Score(average="macro", **options)}
        )
