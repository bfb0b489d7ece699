"""The ordering task of pointer networks: output a permutation of the input's positions."""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassExactMatch

from framework.errors import ConfigError
from framework.layers import counted_mean
from framework.tasks import Task
from framework.values import PositiveInt

from ..data.sorting import IGNORE
from ..metrics import TokenAccuracy
from ..pictures import alignment_image


class Ordering(Task):
    """Train a pointer network with teacher forcing; judge it by the permutations it decodes.

    Every stage logs the loss (negative log-likelihood of the target positions) and
    ``step_acc`` (the target position is the most probable one, under teacher forcing).
    Validation and test also decode every list greedily (``model.point``) and log
    ``position_acc`` (share of output steps that point at the right position) and
    ``sequence_acc`` (share of lists sorted entirely right). ``images`` draws the pointer
    distribution of the first validation list (output steps x input values).

    Args:
        max_length: N, the longest list (``data.max_length``; it sizes the metrics).
        monitor: the validation metric that picks the best checkpoint.
    """

    def __init__(self, max_length: PositiveInt = 10, monitor: str = "val/sequence_acc") -> None:
        super().__init__()
        self.max_length, self.monitor = max_length, monitor

    def check(self, model: nn.Module, data: Any) -> None:
        super().check(model, data)
        length = getattr(data, "max_length", None)
        if isinstance(length, int) and length != self.max_length:
            raise ConfigError(
                f"task.max_length is {self.max_length} but data.max_length is {length}: set both to {length}"
            )

    def metrics(self) -> MetricCollection:
        return MetricCollection({"step_acc": TokenAccuracy(IGNORE)})

    def generation_metrics(self) -> MetricCollection:
        options = dict(num_classes=self.max_length, ignore_index=IGNORE, multidim_average="global")
        return MetricCollection(
            {
                "position_acc": MulticlassAccuracy(average="micro", **options),
                "sequence_acc": MulticlassExactMatch(**options),
            }
        )

    def decode(self, model: nn.Module, batch: Any) -> tuple[Tensor, Tensor]:
        """The greedily decoded permutations (B, N) and the target ones."""
        return model.point(batch["values"], batch["mask"]), batch["target"]

    def split(self, batch: Any) -> tuple[Any, Tensor]:
        return batch, batch["target"]

    def run_model(self, model: nn.Module, batch: Any) -> Tensor:
        """log p (B, N, N) of every output step over the input positions, under teacher forcing."""
        return model(batch["values"], batch["mask"], batch["target"])

    def losses(self, output: Tensor, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        return counted_mean(F.nll_loss, output.transpose(1, 2), target, IGNORE), {}

    def predict(self, model: nn.Module, batch: Any) -> Tensor:
        """The decoded permutations, (B, N) (``IGNORE`` beyond each list's length)."""
        return model.point(batch["values"], batch["mask"])

    def write_predictions(self, prediction: Tensor, batch: Any, sink: Any) -> None:
        """``predictions.csv``: the index of each list and its decoded order, positions separated by spaces."""
        orders = [" ".join(str(p) for p in row if p != IGNORE) for row in prediction.tolist()]
        sink.rows("predictions.csv", ["example", "order"], zip(sink.take(len(orders)), orders))

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        """``alignment``: where each output step of the first list points (rows: the values it
        should output in order; columns: the input values)."""
        length = int(batch["mask"][0].sum())
        values, target = batch["values"][:1, :length], batch["target"][:1, :length]
        weights = model(values, batch["mask"][:1, :length], target, need_weights=True).weights[0]
        inputs = [f"{v:.2f}" for v in values[0].tolist()]
        return {
            "alignment": [
                alignment_image(
                    weights,
                    inputs,
                    [inputs[j] for j in target[0].tolist()],
                    "first validation list: where each output step points",
                )
            ]
        }
