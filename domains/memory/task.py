"""Question answering over a story: the answer is one word of the vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection

from framework.tasks import Task

from .metrics import OVERALL, AnswerMetric
from .pictures import hop_image


class QuestionAnswering(Task):
    """Cross-entropy over the vocabulary against the answer word; per-task accuracy and error.

    Logs ``acc``, ``error``, ``mean_error`` (the error averaged over the tasks, as the bAbI
    tables report it) and ``error_task<k>`` for each task k of ``tasks``. The best
    checkpoint is the one with the highest ``val/acc``.

    Batches are the mappings of ``domains.memory.data.stories``; the model is called as
    ``model(story, question)`` and returns logits (B, V), or with ``need_weights=True``
    ``(logits, hop weights (B, K, N))``. :meth:`images` draws the hop weights of the first
    validation question with its supporting facts marked.

    Args:
        tasks: the bAbI task numbers the data holds (``data.tasks``), one metric each.
    """

    monitor = "val/acc"
    mode = "max"

    def __init__(self, tasks: Sequence[int] = (1, 2)) -> None:
        super().__init__()
        self.tasks = [tasks] if isinstance(tasks, int) else list(tasks)
        if not self.tasks or any(not isinstance(t, int) or t < 1 for t in self.tasks) or len(set(self.tasks)) < len(self.tasks):
            raise ValueError(f"task.tasks must be distinct task numbers (1, 2, ...), got {tasks!r}")

    def metrics(self) -> MetricCollection:
        figures = {name: AnswerMetric(self.tasks, name) for name in OVERALL}
        figures.update({f"error_task{k}": AnswerMetric(self.tasks, k) for k in self.tasks})
        return MetricCollection(figures)

    def check(self, model: nn.Module, data: Any) -> None:
        """The data's tasks must be among ``task.tasks``, besides the sizes of the base check
        (the model's vocabulary must hold the data's)."""
        data_tasks = getattr(data, "tasks", None)
        if data_tasks is not None and not set(data_tasks) <= set(self.tasks):
            raise ValueError(f"task.tasks={self.tasks} but the data holds tasks {list(data_tasks)}: set task.tasks to "
                             "data.tasks")
        super().check(model, data)

    def split(self, batch: dict[str, Tensor]) -> tuple[dict[str, Tensor], Tensor]:
        return {"story": batch["story"], "question": batch["question"]}, batch["target"]

    def losses(self, output: Tensor, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        return F.cross_entropy(output, target), {}

    def metric_inputs(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """The bAbI task of each question, for the per-task figures."""
        return {"task": batch["task"]}

    def images(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, list[Tensor]]:
        _, weights = model(batch["story"][:1], batch["question"][:1], need_weights=True)
        if weights is None:  # the no-attention baseline
            return {}
        sentences = int(batch["story"][0].ne(0).any(-1).sum())
        return {"memory_hops": [hop_image(weights[0, :, :sentences], batch["support"][0, :sentences])]}
