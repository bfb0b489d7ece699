"""Classification: one label per example (sentence, image, clip, node ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

from ..attention import capture
from ..data.sizes import require_sizes
from ..errors import ConfigError
from ..evaluation.protocol import ItemAttention, erase_tokens
from .attention_training import AttentionTraining
from .base import Task, inputs_of

#: The batch entry of token batches that holds the gold evidence (B, N) bool (the queried pair
#: of an associative recall): read by the evaluation and the attention losses, never the model's.
GOLD = "gold"


class ReadOut(NamedTuple):
    """Logits with the read-out's attention over the tokens (B, N), for the attention losses."""

    logits: Tensor
    weights: Tensor
    gold: Tensor
    mask: Tensor


class Classification(AttentionTraining, Task):
    """Cross-entropy on logits (B, K) against labels (B,); logs ``acc`` and macro ``f1``.

    Args:
        num_classes: K.
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
        ignore_index: labels with this value count in neither loss nor metrics.
        attention_supervision, decouple_attention, random_attention: the attention-training
            families of :mod:`framework.tasks.attention_training`, for token batches that carry
            gold evidence (``gold``, the demo's associative recall): the loss adds lambda x the
            cross-entropy, or mu x -log(1 - m), of the read-out's attention over the tokens (the
            last attention block's row of the last real token, heads averaged) against the gold
            tokens; or every block's weights are drawn at random. Off by default.
    """

    monitor = "val/acc"
    mode = "max"

    def __init__(self, num_classes: Optional[int] = None, label_smoothing: float = 0.0, ignore_index: int = -100,
                 attention_supervision: float = 0.0, decouple_attention: float = 0.0,
                 random_attention: bool = False) -> None:
        require_sizes("task", num_classes=num_classes)
        super().__init__()
        if num_classes < 2:
            raise ConfigError(f"task.num_classes must be at least 2, got {num_classes}")
        self.num_classes, self.label_smoothing, self.ignore_index = num_classes, label_smoothing, ignore_index
        self.attention_options(attention_supervision, decouple_attention, random_attention)

    def check(self, model: nn.Module, data: Any) -> None:
        """Beyond the base's sizes: the attention losses need data with gold evidence; random
        attention is set on the model."""
        super().check(model, data)
        if self.trains_on_gold and not getattr(data, "gold_evidence", False):
            raise ConfigError(f"{self.gold_options()} needs token batches with gold evidence (domains.demo."
                              f"AssociativeRecall); {type(data).__name__} has none: set them to 0")
        self.randomise(model)

    def split(self, batch: Any) -> tuple[Any, Any]:
        """Token batches: the model's inputs without the gold evidence, unless the losses read it."""
        inputs, target = super().split(batch)
        if isinstance(inputs, Mapping) and GOLD in inputs and not self.trains_on_gold:
            inputs = {key: value for key, value in inputs.items() if key != GOLD}
        return inputs, target

    def run_model(self, model: nn.Module, inputs: Any) -> Any:
        """The logits, or with gold in the inputs (the attention losses) a :class:`ReadOut`."""
        if not (isinstance(inputs, Mapping) and GOLD in inputs):
            return super().run_model(model, inputs)
        inputs = dict(inputs)
        gold = inputs.pop(GOLD)
        with capture(model, detach=False) as maps:
            logits = super().run_model(model, inputs)
        row = self._read_out(maps, inputs["mask"])
        if row is None:
            raise ConfigError(f"{self.gold_options()} needs a model with attention; {type(model).__name__} has none")
        return ReadOut(logits, row[1], gold.bool(), inputs["mask"].bool())

    def preds(self, output: Any) -> Tensor:
        return output.logits if isinstance(output, ReadOut) else output

    def predict(self, model: nn.Module, batch: Any) -> Any:
        inputs = inputs_of(batch)
        if isinstance(inputs, Mapping):
            inputs = {key: value for key, value in inputs.items() if key != GOLD}
        return self.preds(self.run_model(model, inputs))

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        logits = self.preds(output)
        if logits.shape[-1] != self.num_classes:
            raise ValueError(
                f"classification: the model gives {logits.shape[-1]} logits per example but "
                f"task.num_classes={self.num_classes}"
            )
        loss = F.cross_entropy(logits, target, label_smoothing=self.label_smoothing, ignore_index=self.ignore_index)
        if not isinstance(output, ReadOut):
            return loss, {}
        extra, logs = self.gold_losses(output.weights.float().unsqueeze(1), output.gold.unsqueeze(1),
                                       output.mask.unsqueeze(1))
        return loss + extra, logs

    def metrics(self) -> MetricCollection:
        options = dict(num_classes=self.num_classes, ignore_index=self.ignore_index)
        return MetricCollection(
            {"acc": MulticlassAccuracy(average="micro", **options), "f1": MulticlassF1Score(average="macro", **options)}
        )

    # Evaluation hooks for token sequences read out at their last real token (the demo's
    # SequenceClassifier): batches {"tokens" (B, N), "mask" (B, N), "target"}, the items are the
    # tokens, the gold the batch's "gold" tokens where it has them. Other batches have no items
    # here; the domains' tasks define their own.

    @staticmethod
    def _tokens(batch: Any) -> bool:
        return isinstance(batch, Mapping) and "tokens" in batch and "mask" in batch

    @staticmethod
    def _read_out(maps: Any, mask: Tensor) -> Optional[tuple[str, Tensor]]:
        """The last attention block's row (B, N) of the last real token over the tokens (heads
        averaged, renormalised over the tokens), and the block's name; None without one."""
        found = [(name, records[-1]) for name, records in maps.items()
                 if records and records[-1].queries is not None and isinstance(records[-1].weights, Tensor)]
        if not found:
            return None
        name, record = found[-1]
        weights = record.weights.float()
        while weights.dim() > 3:
            weights = weights.mean(1)
        mask = mask.bool()
        last = mask.sum(1) - 1
        row = weights[torch.arange(len(weights), device=weights.device), last.clamp(min=0)] * mask
        return name, row / row.sum(-1, keepdim=True).clamp(min=1e-12)

    def item_attention(self, model: nn.Module, batch: Any) -> Optional[ItemAttention]:
        """The last attention block's weights from the last real token (the read-out) over the
        tokens, heads averaged."""
        if not self._tokens(batch):
            return None
        with capture(model) as maps:
            self.decision(model, batch)
        found = self._read_out(maps, batch["mask"])
        if found is None:
            return None
        return ItemAttention(found[1], batch["mask"].bool(), (found[0],))

    def gold_attention(self, batch: Any) -> Optional[Tensor]:
        """The batch's gold tokens (B, N) where it has them (the queried pair of an associative recall)."""
        return batch.get(GOLD) if self._tokens(batch) else None

    def erase_items(self, batch: Any, erased: Tensor) -> Optional[Any]:
        """The tokens ``erased`` cut out of each sequence (:func:`erase_tokens`)."""
        if not self._tokens(batch):
            return None
        tokens, mask = erase_tokens(batch["tokens"], batch["mask"], erased)
        erased_batch = {**batch, "tokens": tokens, "mask": mask}
        if GOLD in batch:  # the gold tokens that stay, where they moved
            erased_batch[GOLD] = erase_tokens(batch[GOLD].long(), batch["mask"], erased, pad=0)[0].bool() & mask
        return erased_batch

    def item_layer(self, model: nn.Module) -> Optional[nn.Module]:
        """The model's first token embedding."""
        return next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
