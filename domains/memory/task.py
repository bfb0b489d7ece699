"""Question answering over a story: the answer is one word of the vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection

from framework.tasks import Step, Task

from .metrics import OVERALL, AnswerMetric
from .pictures import hop_image


class QuestionAnswering(Task):
    """Cross-entropy over the vocabulary against the answer word; per-task accuracy and error.

    Logs ``acc``, ``error``, ``mean_error`` (the error averaged over the tasks, as the bAbI
    tables report it) and ``error_task<k>`` for each task k of ``tasks``. The best
    checkpoint is the one with the highest ``val/acc``.

    Batches are the mappings of ``domains.memory.stories``; the model is called as
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
        self._vocabulary_checked = False

    def metrics(self) -> MetricCollection:
        figures = {name: AnswerMetric(self.tasks, name) for name in OVERALL}
        figures.update({f"error_task{k}": AnswerMetric(self.tasks, k) for k in self.tasks})
        return MetricCollection(figures)

    def step(self, model: nn.Module, batch: dict[str, Tensor], stage: str) -> Step:
        self._check_vocabulary(model, batch)
        logits = model(batch["story"], batch["question"])
        loss = F.cross_entropy(logits, batch["target"])
        return Step(loss, logits, torch.stack([batch["target"], batch["task"]], -1))

    def predict(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        """Answer logits (B, V)."""
        return model(batch["story"], batch["question"])

    def images(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, list[Tensor]]:
        _, weights = model(batch["story"][:1], batch["question"][:1], need_weights=True)
        if weights is None:  # the no-attention baseline
            return {}
        sentences = int(batch["story"][0].ne(0).any(-1).sum())
        return {"memory_hops": [hop_image(weights[0, :, :sentences], batch["support"][0, :sentences])]}

    def _check_vocabulary(self, model: nn.Module, batch: dict[str, Any]) -> None:
        """Once: the data's word ids fit the model's vocabulary (a clear error, not an index error)."""
        size = getattr(model, "vocab_size", None)
        if self._vocabulary_checked or size is None:
            return
        largest = max(int(batch[key].max()) for key in ("story", "question", "target"))
        if largest >= size:
            raise ValueError(f"the data has word ids up to {largest} but model.vocab_size = {size}; set "
                             "model.vocab_size to the data's vocabulary size (see the data module's docstring)")
        self._vocabulary_checked = True
