"""Answer accuracy and error, over all questions, per bAbI task, and averaged over the tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Union

import torch
from torch import Tensor
from torchmetrics import Metric

from framework.errors import ConfigError
from framework.values import PositiveInt

#: Figures of the questions of all tasks together.
OVERALL = ("acc", "error", "mean_error")


class AnswerMetric(Metric):
    """Counts right answers per task and reports one figure of the counts.

    ``figure``: ``"acc"`` (right / asked, all questions), ``"error"`` (1 - acc),
    ``"mean_error"`` (the error of each task, averaged over the tasks that were asked, the
    bAbI papers' "mean error"), or a task number k (the error on task k alone; NaN when the
    data asked none of its questions). Equal task
    sizes make ``error`` and ``mean_error`` equal; they differ when the tasks do not.

    Update with logits (B, V), the answers (B,) and the task numbers (B,) of the questions. The counts
    are summed across processes, so the figures are exact under DDP.

    Args:
        tasks: the task numbers the data may hold; any other is an error.
        figure: what :meth:`compute` returns.
    """

    full_state_update = False

    @property
    def higher_is_better(self) -> bool:  # type: ignore[override]
        """The accuracy is better higher, every error lower."""
        return self.figure == "acc"

    def __init__(
        self, tasks: Sequence[PositiveInt], figure: Union[Literal["acc", "error", "mean_error"], PositiveInt]
    ) -> None:
        super().__init__()
        if figure not in OVERALL and figure not in tasks:
            raise ValueError(
                f"answer metric: figure must be one of {OVERALL} or a task of {list(tasks)}, got {figure!r}"
            )
        self.tasks, self.figure = list(tasks), figure
        index = torch.full((max(tasks) + 1,), -1, dtype=torch.long)
        index[self.tasks] = torch.arange(len(self.tasks))
        self.register_buffer("index", index, persistent=False)
        self.add_state("right", torch.zeros(len(self.tasks)), dist_reduce_fx="sum")
        self.add_state("asked", torch.zeros(len(self.tasks)), dist_reduce_fx="sum")

    def update(self, logits: Tensor, answers: Tensor, task: Tensor) -> None:
        tasks = task
        unknown = (tasks < 0) | (tasks >= len(self.index))
        slots = self.index[tasks.clamp(0, len(self.index) - 1)].masked_fill(unknown, -1)
        if (slots < 0).any():
            raise ConfigError(
                f"the data holds questions of task {int(tasks[slots < 0][0])}, but task.tasks = "
                f"{self.tasks}; list the data's tasks there"
            )
        right = (logits.argmax(-1) == answers).float()
        self.right += torch.zeros_like(self.right).index_add_(0, slots, right)
        self.asked += torch.zeros_like(self.asked).index_add_(0, slots, torch.ones_like(right))

    def compute(self) -> Tensor:
        if self.figure == "acc":
            return self.right.sum() / self.asked.sum().clamp(min=1)
        if self.figure == "error":
            return 1 - self.right.sum() / self.asked.sum().clamp(min=1)
        errors = torch.where(self.asked > 0, 1 - self.right / self.asked.clamp(min=1), torch.nan)
        if self.figure == "mean_error":
            return errors.nanmean()
        return errors[self.tasks.index(self.figure)]


class BitErrors(Metric):
    """Errors of binary answers: ``figure`` ``"bits"``, the wrong bits per sequence (the NTM paper's
    cost per sequence, in bits), or ``"sequences"``, the fraction of sequences with a wrong bit.

    Update with logits (B, ...) (a bit is 1 where its logit is positive) and the target bits
    of the same shape; the counts are summed across processes.
    """

    full_state_update = False
    higher_is_better = False

    def __init__(self, figure: Literal["bits", "sequences"] = "bits") -> None:
        super().__init__()
        if figure not in ("bits", "sequences"):
            raise ValueError(f"bit errors: figure must be 'bits' or 'sequences', got {figure!r}")
        self.figure = figure
        self.add_state("wrong", torch.zeros(()), dist_reduce_fx="sum")
        self.add_state("sequences", torch.zeros(()), dist_reduce_fx="sum")

    def update(self, logits: Tensor, target: Tensor) -> None:
        wrong = ((logits > 0) != (target > 0.5)).flatten(1).sum(1).float()
        self.wrong += wrong.sum() if self.figure == "bits" else (wrong > 0).sum()
        self.sequences += len(wrong)

    def compute(self) -> Tensor:
        return self.wrong / self.sequences.clamp(min=1)
