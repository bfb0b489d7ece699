"""A task: how a batch becomes a loss, predictions and metrics.

Domains add tasks and models; the one ``TaskModule`` runs them all. A batch is either a
``(inputs, target)`` pair or a mapping with a ``"target"`` entry whose other entries are
the model's keyword arguments (``{"tokens": ..., "mask": ..., "target": ...}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from torch import Tensor, nn
from torchmetrics import MetricCollection

if TYPE_CHECKING:
    from ..callbacks.predictions import PredictionSink


#: Sizes that a data module and a model or task may both state, and how they must compare: a model's
#: vocabulary may be larger than the data's, the other sizes must be equal.
SIZES = {"vocab_size": "at least", "num_classes": "equal", "in_channels": "equal", "num_items": "equal"}


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
        mismatch fails at once instead of training on wrong inputs (or failing with an index
        error later). The base checks the sizes of :data:`SIZES` that both the data and the
        model or task state; a task with sizes of its own extends it (calling ``super()``).
        """
        for name, rule in SIZES.items():
            wanted = getattr(data, name, None)
            if not isinstance(wanted, int) or isinstance(wanted, bool):
                continue
            for owner, holder in (("model", model), ("task", self)):
                given = getattr(holder, name, None)
                if isinstance(given, int) and (given < wanted if rule == "at least" else given != wanted):
                    raise ValueError(f"{owner}.{name} is {given} but the data has {wanted}: set {owner}.{name}="
                                     f"{wanted}{' or more' if rule == 'at least' else ''}")

    def step(self, model: nn.Module, batch: Any, stage: str) -> Step:
        inputs, target = split_batch(batch)
        output = call_model(model, inputs)
        return Step(self.loss(output, target), output, target)

    def predict(self, model: nn.Module, batch: Any) -> Any:
        """What ``predict`` returns for a batch; by default the model's raw output."""
        return call_model(model, inputs_of(batch))

    def write_predictions(self, prediction: Any, batch: Any, sink: PredictionSink) -> None:
        """Write one batch's :meth:`predict` output into the run folder's ``predictions/``.

        The default takes class scores (B, K) and appends to ``predictions.csv`` the columns
        ``example`` (its index in the predicted split), ``class`` (the arg-max) and ``score``
        (its softmax probability). Tasks that predict something else override it.
        """
        if not (isinstance(prediction, Tensor) and prediction.dim() == 2 and prediction.is_floating_point()):
            raise TypeError(f"{type(self).__name__}.predict gives {type(prediction).__name__}, not class scores (B, K): "
                            "define its write_predictions to say how to write it")
        score, label = prediction.detach().float().softmax(-1).max(-1)
        sink.rows("predictions.csv", ["example", "class", "score"],
                  zip(sink.take(len(label)), label.tolist(), (f"{s:.6f}" for s in score.tolist())))

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        """Pictures of a validation batch for the loggers (predicted masks beside the truth,
        alignments ...): name -> list of (H, W, 3) uint8 images. None by default.

        Called by the ``attention_maps`` callback under ``torch.no_grad``, on every rank.
        """
        return {}
