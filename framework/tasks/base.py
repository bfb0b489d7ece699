"""A task: how a batch becomes a loss, predictions and metrics.

Domains add tasks and models; the one ``TaskModule`` runs them all. A batch is either a
``(inputs, target)`` pair or a mapping with a ``"target"`` entry whose other entries are
the model's keyword arguments (``{"tokens": ..., "mask": ..., "target": ...}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

from torch import Tensor, nn
from torchmetrics import MetricCollection


class Step(NamedTuple):
    """What one training/validation/test step produced."""

    loss: Tensor
    preds: Tensor  # what the metrics consume (logits, scores ...)
    target: Tensor
    logs: Optional[dict[str, Tensor]] = None  # further scalars, logged as <stage>/<name> (aux loss, penalty ...)


def call_model(model: nn.Module, inputs: Any) -> Any:
    """Call ``model`` with a batch's inputs: a mapping as keyword arguments, else positionally."""
    if isinstance(inputs, Mapping):
        return model(**inputs)
    return model(inputs)


def split_batch(batch: Any) -> tuple[Any, Tensor]:
    """``(inputs, target)`` of a batch in either convention."""
    if isinstance(batch, Mapping):
        if "target" not in batch:
            raise KeyError(f"a batch mapping needs a 'target' entry; it has {sorted(batch)}")
        return inputs_of(batch), batch["target"]
    inputs, target = batch
    return inputs, target


def inputs_of(batch: Any) -> Any:
    """The model inputs of a batch that may or may not carry a target (prediction)."""
    if isinstance(batch, Mapping):
        return {k: v for k, v in batch.items() if k != "target"}
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0]
    return batch


class Task(nn.Module):
    """Base class of tasks.

    Subclasses define ``loss(output, target) -> Tensor`` and :meth:`metrics`, and may
    override :meth:`step` (how a batch is split and the model called) and :meth:`predict`.
    ``monitor`` and ``mode`` name the validation metric that selects the best checkpoint.
    """

    monitor: str = "val/loss"
    mode: str = "min"

    def metrics(self) -> MetricCollection:
        """A fresh metric collection; the TaskModule keeps one copy per stage."""
        return MetricCollection({})

    def check(self, model: nn.Module, data: Any) -> None:
        """Raise a ``ValueError`` that names the config keys when ``model`` or this task does not
        fit ``data``, for sizes a config states twice (a sample rate, a feature count ...).

        The TaskModule calls it when a run starts, after the data module's ``setup``, so a
        mismatch fails at once instead of training on wrong inputs. Nothing by default.
        """

    def step(self, model: nn.Module, batch: Any, stage: str) -> Step:
        inputs, target = split_batch(batch)
        output = call_model(model, inputs)
        return Step(self.loss(output, target), output, target)

    def predict(self, model: nn.Module, batch: Any) -> Any:
        """What ``predict`` returns for a batch; by default the model's raw output."""
        return call_model(model, inputs_of(batch))

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        """Pictures of a validation batch for the loggers (predicted masks beside the truth,
        alignments ...): name -> list of (H, W, 3) uint8 images. None by default.

        Called by the ``attention_maps`` callback under ``torch.no_grad``, on every rank.
        """
        return {}
