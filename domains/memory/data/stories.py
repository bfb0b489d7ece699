"""Stories with a question, as tensors: what both the bAbI reader and the generator produce.

A batch is a mapping::

    story    (B, N, L) long   word ids of the N most recent sentences, oldest first, 0 = padding
    question (B, Lq)   long
    target   (B,)      long   the answer's word id (an answer such as "n,w" is one word)
    task     (B,)      long   the bAbI task number of the question
    support  (B, N)    bool   the supporting facts among the story's sentences
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Optional

import torch
from torchdata.stateful_dataloader import StatefulDataLoader as DataLoader

from framework.data import SplitDataModule
from framework.data.sampling import LengthGroupedShuffle
from framework.data.tensors import Batch, TensorExamples
from framework.values import NonNegativeInt, PositiveInt

from ..models.encoding import PAD

WORD = re.compile(r"\w+")


def words_of(text: str) -> list[str]:
    """Lower-case words, punctuation dropped: ``"Where is Mary?"`` -> ``["where", "is", "mary"]``."""
    return WORD.findall(text.lower())


class Example(NamedTuple):
    """One question about a story."""

    story: list[list[str]]  # sentences, oldest first
    question: list[str]
    answer: str
    support: list[int]  # indices into story
    task: int


class Vocabulary:
    """Word <-> id, with id 0 the padding; answers are words too."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = ["<pad>", *sorted(set(words))]
        self.ids = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, words: Sequence[str]) -> list[int]:
        try:
            return [self.ids[w] for w in words]
        except KeyError as err:
            raise KeyError(f"word {err.args[0]!r} is not in the vocabulary of {len(self)} words") from None


class StoryDataset(TensorExamples):
    """Examples as padded tensors, the story cut to its ``memory_size`` most recent sentences
    (supporting facts that fall out of the window are dropped).

    A batch (``dataset.__getitems__(indices)``, what the loaders call) is cut to the sentences,
    words and question words its examples use: the sizes come from per-example lengths kept
    on the CPU, so cutting never waits for a GPU.
    """

    fields = ("story", "question", "target", "task", "support")

    def __init__(self, examples: Sequence[Example], vocab: Vocabulary, memory_size: int) -> None:
        if not examples:
            raise ValueError("a story dataset needs at least one example")
        slots = min(memory_size, max(len(ex.story) for ex in examples))
        kept = [ex.story[-slots:] for ex in examples]
        width = max(len(s) for story in kept for s in story)
        # Each distinct sentence is encoded once (the questions of a story share their
        # sentences); row 0 of the table is the empty sentence that pads short stories.
        table, rows = [[PAD] * width], {}
        slot_rows = []
        for story in kept:
            for sentence in story:
                if id(sentence) not in rows:
                    rows[id(sentence)] = len(table)
                    table.append(vocab.encode(sentence) + [PAD] * (width - len(sentence)))
            slot_rows.append([rows[id(s)] for s in story] + [0] * (slots - len(story)))
        self.story = torch.tensor(table)[torch.tensor(slot_rows)]  # (M, N, L)
        longest = max(len(ex.question) for ex in examples)
        self.question = torch.tensor(
            [vocab.encode(ex.question) + [PAD] * (longest - len(ex.question)) for ex in examples]
        )
        self.support = torch.zeros(len(examples), slots, dtype=torch.bool)
        cut = [
            (row, i - (len(ex.story) - len(story)))
            for row, (ex, story) in enumerate(zip(examples, kept))
            for i in ex.support
        ]
        cut = [(row, slot) for row, slot in cut if slot >= 0]  # supporting facts that fell out of the window
        if cut:
            self.support[tuple(torch.tensor(cut).T)] = True
        self.target = torch.tensor([vocab.ids[ex.answer] for ex in examples])
        self.task = torch.tensor([ex.task for ex in examples])
        words = self.story.ne(PAD)  # (slots, words per sentence, question words) of every example, on the CPU
        self.sizes = torch.stack([words.any(-1).sum(1), words.sum(-1).amax(1), self.question.ne(PAD).sum(-1)], 1)

    def __getitems__(self, indices: Sequence[int]) -> Batch:
        batch = super().__getitems__(indices)
        slots, width, question = self.sizes[torch.as_tensor(indices)].amax(0).clamp(min=1).tolist()
        batch["story"] = batch["story"][:, :slots, :width]
        batch["support"] = batch["support"][:, :slots]
        batch["question"] = batch["question"][:, :question]
        return batch


class StoryDataModule(SplitDataModule):
    """Base of the story data modules: examples by split -> padded tensors, batches cut to size.

    A subclass implements :meth:`examples` (``{"train": [...], "val": [...], "test": [...]}``)
    and :meth:`vocabulary`.

    Args:
        memory_size: the most recent sentences kept of each story (50 in the paper).
        similar_lengths: 0 shuffles the training questions plainly; n > 0 makes training
            batches of stories of similar length, sorted within random pools of n batches
            (:class:`~framework.data.LengthGroupedShuffle`): a joint bAbI epoch pads batches to 9 sentences on
            average instead of 41, about 4x faster. Under DDP, Lightning's distributed
            sampler replaces it (plain shuffling).
        batch_size, eval_batch_size, num_workers: as in ``SplitDataModule``.
    """

    #: batches carry the supporting facts (``task.attention_supervision`` and ``evaluate`` read them)
    gold_evidence = True

    def __init__(
        self,
        memory_size: PositiveInt = 50,
        similar_lengths: NonNegativeInt = 0,
        batch_size: PositiveInt = 32,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        self.memory_size, self.similar_lengths = memory_size, similar_lengths

    def train_dataloader(self) -> DataLoader:
        if not self.similar_lengths:
            return super().train_dataloader()
        lengths = self.split("train").story.ne(PAD).any(-1).sum(1)
        return self.loader("train", sampler=LengthGroupedShuffle(lengths, self.batch_size, self.similar_lengths))

    def examples(self) -> dict[str, list[Example]]:
        raise TypeError(f"{type(self).__name__} must define examples(), returning the examples by split")

    def vocabulary(self) -> Vocabulary:
        raise TypeError(f"{type(self).__name__} must define vocabulary()")

    @property
    def vocab_size(self) -> int:
        """Words and answers, padding included: what ``model.vocab_size`` must hold."""
        return len(self.vocabulary())

    def make_splits(self) -> dict[str, StoryDataset]:
        vocab = self.vocabulary()
        named = self.examples()
        empty = next((name for name, examples in named.items() if not examples), None)
        if empty is not None:
            raise self.empty_split(empty)
        return {name: StoryDataset(examples, vocab, self.memory_size) for name, examples in named.items()}
