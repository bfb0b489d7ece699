"""Classification: one label per example (sentence, image, clip, node ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

from ..attention import capture
from ..data.sizes import require_sizes
from ..errors import ConfigError
from ..evaluation.protocol import ItemAttention, erase_tokens
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

    def __init__(self, num_classes: Optional[int] = None, label_smoothing: float = 0.0, ignore_index: int = -100) -> None:
        require_sizes("task", num_classes=num_classes)
        super().__init__()
        if num_classes < 2:
            raise ConfigError(f"task.num_classes must be at least 2, got {num_classes}")
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

    # Evaluation hooks for token sequences read out at their last real token (the demo's
    # SequenceClassifier): batches {"tokens" (B, N), "mask" (B, N), "target"}, the items are the
    # tokens. Other batches have no items here; the domains' tasks define their own.

    @staticmethod
    def _tokens(batch: Any) -> bool:
        return isinstance(batch, Mapping) and "tokens" in batch and "mask" in batch

    def item_attention(self, model: nn.Module, batch: Any) -> Optional[ItemAttention]:
        """The last attention block's weights from the last real token (the read-out) over the
        tokens, heads averaged."""
        if not self._tokens(batch):
            return None
        with capture(model) as maps:
            self.decision(model, batch)
        found = [(name, records[-1]) for name, records in maps.items()
                 if records and records[-1].queries is not None and isinstance(records[-1].weights, Tensor)]
        if not found:
            return None
        name, record = found[-1]
        weights = record.weights.float()
        while weights.dim() > 3:
            weights = weights.mean(1)
        mask = batch["mask"].bool()
        last = mask.sum(1) - 1
        row = weights[torch.arange(len(weights), device=weights.device), last.clamp(min=0)]
        row = row * mask
        return ItemAttention(row / row.sum(-1, keepdim=True).clamp(min=1e-12), mask, (name,))

    def erase_items(self, batch: Any, erased: Tensor) -> Optional[Any]:
        """The tokens ``erased`` cut out of each sequence (:func:`erase_tokens`)."""
        if not self._tokens(batch):
            return None
        tokens, mask = erase_tokens(batch["tokens"], batch["mask"], erased)
        return {**batch, "tokens": tokens, "mask": mask}

    def item_layer(self, model: nn.Module) -> Optional[nn.Module]:
        """The model's first token embedding."""
        return next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
