"""Question answering over a story (the answer is one word of the vocabulary), and the binary
answers of algorithmic memory tasks (associative recall of bit vectors)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection

from framework.attention import blocks_in
from framework.errors import ConfigError
from framework.evaluation.protocol import GoldView, ItemAttention, ItemForward, Watched, replaying
from framework.tasks import Task
from framework.tasks.attention_training import AttentionTraining
from framework.values import NonNegativeFloat, PositiveInt

from .metrics import OVERALL, AnswerMetric, BitErrors
from .pictures import hop_image, weights_image


class QuestionAnswering(AttentionTraining, Task):
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
        attention_supervision: weight lambda of strong supervision (Sukhbaatar et al. 2015, §4;
            Weston et al. 2015): the loss adds lambda x the cross-entropy of every hop's weights
            (the views of :meth:`gold_views`: MemN2N's and KV-MemNN's hops, DMN's passes, the
            matching reader's sentence weights) against the supporting facts (one unit of mass
            spread over them), logged as ``<stage>/attention_loss``; skipped while linear start
            has the softmax off. 0 = off.
        decouple_attention: weight mu of the decoupled family: the loss adds mu x -log(1 - m) of
            every hop, m its mass on the supporting facts (logged as ``<stage>/decoupling_loss``;
            skipped under linear start too). 0 = off.
        random_attention: every hop's weights drawn at random, in training and at test.
        (:mod:`framework.tasks.attention_training` says what the three families are for.)

    Evaluation (``python -m framework evaluate``): the items are the story's sentences (the
    hops' weights averaged), erased by emptying them; the gold is the supporting facts, and
    attention correctness is reported per hop and per bAbI task.
    """

    monitor = "val/acc"
    gold_data = "stories with supporting facts (domains.memory.GeneratedStories, BabiStories)"
    gold_model = "a model with a memory read"

    def __init__(
        self,
        tasks: Sequence[PositiveInt] = (1, 2),
        attention_supervision: NonNegativeFloat = 0.0,
        decouple_attention: NonNegativeFloat = 0.0,
        random_attention: bool = False,
    ) -> None:
        super().__init__()
        self.attention_options(attention_supervision, decouple_attention, random_attention)
        self.tasks = [tasks] if isinstance(tasks, int) else list(tasks)
        self.words: list[str] = []  # the data's vocabulary (id -> word), read by check(), for the pictures
        if not self.tasks or len(set(self.tasks)) < len(self.tasks):
            raise ConfigError(f"task.tasks must be distinct task numbers (1, 2, ...), got {tasks!r}")

    def metrics(self) -> MetricCollection:
        figures = {name: AnswerMetric(self.tasks, name) for name in OVERALL}
        figures.update({f"error_task{k}": AnswerMetric(self.tasks, k) for k in self.tasks})
        return MetricCollection(figures)

    def check(self, model: nn.Module, data: Any) -> None:
        """The data's tasks must be among ``task.tasks``, besides the base's checks (the model's
        vocabulary must hold the data's; the attention-training options); the data's vocabulary
        is kept for the pictures' words."""
        vocabulary = getattr(data, "vocabulary", None)
        self.words = list(vocabulary().words) if callable(vocabulary) else []
        data_tasks = getattr(data, "tasks", None)
        if data_tasks is not None and not set(data_tasks) <= set(self.tasks):
            raise ConfigError(
                f"task.tasks={self.tasks} but the data holds tasks {list(data_tasks)}: set task.tasks to data.tasks"
            )
        super().check(model, data)

    def run_model(self, model: nn.Module, inputs: dict[str, Tensor]) -> Tensor:
        """Logits (B, V) of the story and the question (the batch's other entries left out)."""
        return model(inputs["story"], inputs["question"])

    def preds(self, output: Any) -> Tensor:
        """The logits (B, V), also of :meth:`watch`'s ``(logits, hop weights)``."""
        return output[0] if isinstance(output, tuple) else output

    def losses(self, output: Any, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        return F.cross_entropy(self.preds(output), target), {}

    def metric_inputs(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """The bAbI task of each question, for the per-task figures."""
        return {"task": batch["task"]}

    # Evaluation hooks: the items are the story's sentences; the gold the supporting facts.

    def decision(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        return model(batch["story"], batch["question"])

    def item_attention(self, model: nn.Module, batch: dict[str, Tensor]) -> Optional[ItemAttention]:
        """The weights over the sentences that the model returns, (B, K, N) of its K hops or passes
        (MemN2N, KV-MemNN, the DMN, the matching reader alike), averaged over them; None without."""
        weights = self.watch(model, batch).output[1]
        if weights is None:
            return None
        blocks = tuple(blocks_in(model, outermost=True))  # MemN2N's read, the DMN's memory, the reader's co-attention
        return ItemAttention(weights.float().mean(1), batch["story"].ne(0).any(-1), blocks)

    def erase_items(self, batch: dict[str, Tensor], erased: Tensor) -> dict[str, Tensor]:
        """The ``erased`` sentences emptied (all padding): they leave the memory."""
        return {**batch, "story": batch["story"].masked_fill(erased.bool().unsqueeze(-1), 0)}

    def item_layer(self, model: nn.Module) -> Optional[nn.Module]:
        return getattr(model, "words", None)

    def item_forward(self, model: nn.Module, batch: dict[str, Tensor]) -> Optional[ItemForward]:
        """The sentences' embeddings (all tables of a sentence in one vector), replaced in the
        story's call of the embedding (not the question's)."""
        layer = self.item_layer(model)
        if layer is None:
            return None
        seen: list[Tensor] = []
        hook = layer.register_forward_hook(lambda m, args, out: seen.append(out) if out.dim() == 4 else None)
        try:
            with torch.no_grad():
                self.decision(model, batch)
        finally:
            hook.remove()
        story = seen[0]  # (B, N, tables, d)

        def swap(vectors: Tensor) -> Any:
            replaced = vectors.reshape(len(vectors), *story.shape[1:])
            return layer.register_forward_hook(lambda m, args, out: replaced if out.dim() == 4 else None)

        return ItemForward(
            story.flatten(2).detach(),
            replaying(batch, len(story), swap, lambda b: self.decision(model, b)),
            replaying(batch, len(story), swap, lambda b: self.item_attention(model, b).weights),
        )

    def gold_attention(self, batch: dict[str, Tensor]) -> Optional[Tensor]:
        return batch.get("support")

    def watch(self, model: nn.Module, batch: dict[str, Tensor], detach: bool = True) -> Watched:
        """The pass that :meth:`gold_views` reads: the model's ``(logits, hop weights (B, K, N))``
        as it returns them with ``need_weights=True`` (weights None without attention; no capture:
        nothing to detach)."""
        return Watched(model(batch["story"], batch["question"], need_weights=True), {})

    def gold_views(
        self, model: nn.Module, batch: dict[str, Tensor], watched: Optional[Watched] = None
    ) -> list[GoldView]:
        """Each hop's weights (B, 1, N) against the supporting facts, per bAbI task; trained
        unless linear start has the softmax off."""
        if "support" not in batch:
            return []
        weights = (watched or self.watch(model, batch)).output[1]
        if weights is None:
            return []
        support, valid = batch["support"].bool(), batch["story"].ne(0).any(-1)
        trained = not getattr(model, "linear_start", False)
        return [
            GoldView(
                f"hop{k + 1}",
                weights[:, k : k + 1].float(),
                support.unsqueeze(1),
                valid.unsqueeze(1),
                support.any(-1, keepdim=True),
                group=batch["task"],
                group_name="task",
                trained=trained,
            )
            for k in range(weights.shape[1])
        ]

    def images(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, list[Tensor]]:
        """``memory_hops``: the hops' attention over the first validation story's sentences, the story,
        its question and the answers (the words once :meth:`check` has read the data's vocabulary)."""
        logits, weights = model(batch["story"][:1], batch["question"][:1], need_weights=True)
        if weights is None:  # the no-attention baseline
            return {}
        story = batch["story"][0]
        sentences = int(story.ne(0).any(-1).sum())
        said = self._said(batch["question"][0], int(batch["target"][0]), int(logits[0].argmax()))
        return {
            "memory_hops": [
                hop_image(
                    weights[0, :, :sentences],
                    batch["support"][0, :sentences],
                    [self._words(row) for row in story[:sentences]] if self.words else None,
                    f"first validation story, attention of each hop over its sentences\n{said}",
                )
            ]
        }

    def _word(self, index: int) -> str:
        return self.words[index] if index < len(self.words) else f"<{index}>"

    def _words(self, ids: Tensor) -> str:
        """The words of (L,) ids, padding left out."""
        return " ".join(self._word(i) for i in ids.tolist() if i)

    def _said(self, question: Tensor, answer: int, predicted: int) -> str:
        """The question and the true and predicted answers, in words where the vocabulary is known."""
        if not self.words:
            return f"question ids {[i for i in question.tolist() if i]}: answer id {answer}, predicted {predicted}"
        return f"question: {self._words(question)}? answer {self._word(answer)}, predicted {self._word(predicted)}"


class BitSequences(Task):
    """Binary answers of algorithmic tasks (associative recall of bit vectors): binary
    cross-entropy of every answer bit; logs ``bit_errors`` (wrong bits per sequence, the NTM
    paper's figure) and ``seq_error`` (the fraction of sequences with a wrong bit). The best
    checkpoint is the one with the fewest ``val/bit_errors``.

    Batches are the mappings of ``domains.memory.data.recall``; the model is called as
    ``model(inputs, mask)`` and returns logits (B, L, bits), or with ``need_weights=True``
    ``(logits, weights (B, K, rows, cols))`` (NTM: K heads over steps x slots; Hopfield: K
    heads over one query x steps), which :meth:`images` draws for the first validation example.
    """

    monitor = "val/bit_errors"

    def split(self, batch: dict[str, Tensor]) -> tuple[dict[str, Tensor], Tensor]:
        return {"inputs": batch["inputs"], "mask": batch["mask"]}, batch["target"]

    def losses(self, output: Tensor, target: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        if output.shape != target.shape:
            raise ValueError(
                f"bit sequences: the model answers {tuple(output.shape[1:])} (steps, bits) but the data "
                f"asks {tuple(target.shape[1:])}: set model.answer_length and model.output_size to them"
            )
        return F.binary_cross_entropy_with_logits(output, target), {}

    def metrics(self) -> MetricCollection:
        return MetricCollection({"bit_errors": BitErrors("bits"), "seq_error": BitErrors("sequences")})

    def images(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, list[Tensor]]:
        _, weights = model(batch["inputs"][:1], batch["mask"][:1], need_weights=True)
        if weights is None:  # no memory
            return {}
        return {
            "memory_weights": [
                weights_image(head, f"first validation sequence, read head {k + 1} of {len(weights[0])}")
                for k, head in enumerate(weights[0])
            ]
        }
