"""What the text data modules share: raw examples per split, a tokeniser trained on the
training split (or taken from a checkpoint), and padding."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional

import torch
from tokenizers import Tokenizer
from torch import Tensor
from torch.utils.data import DataLoader

from framework.data import SplitDataModule, TextFile
from framework.data.module import Split
from framework.values import NonNegativeInt, PositiveInt

from ..tasks.tokenizer import TokenizerState
from .tokenization import PAD, TokenizerKind, VocabularySize, train_tokenizer

Example = tuple[str, Any]  # (text, target); the target is None for texts to predict


def pad(sequences: Sequence[Sequence[int]], length: Optional[int] = None) -> tuple[Tensor, Tensor]:
    """Right-pad id lists with ``PAD``: ids (B, L) long and mask (B, L) bool (True = token)."""
    length = max([len(s) for s in sequences] + [1]) if length is None else length
    ids = torch.full((len(sequences), length), PAD, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.as_tensor(sequence[:length], dtype=torch.long)
    return ids, ids != PAD


class TextData(SplitDataModule):
    """Base of the text data modules. A subclass builds ``{split: [(text, target), ...]}``
    in :meth:`make_splits`, says which texts train the tokeniser (:meth:`training_texts`)
    and turns examples into batches (:meth:`make_collator`).

    The tokeniser is made when the first loader is: the task's, when a checkpoint restored
    one (``validate``/``test``/``predict``/resumed ``fit`` with ``--ckpt_path``), else one
    trained on the training split, which is then handed to the task so that checkpoints
    carry it. The task checks the model's ``vocab_size`` against this module's when a run
    starts (``Task.check``).

    Args:
        tokenizer: ``char``, ``word`` or ``bpe`` (:mod:`domains.nlp.data.tokenization`).
        vocab_size: the largest vocabulary the tokeniser may learn (more than its 4 special
            tokens); the model's ``vocab_size`` must be at least this.
        lowercase: lower-case every text before tokenising.
        min_frequency: rarer words (``word``) or merges (``bpe``) are left out (0 and 1 keep all).
        max_length: tokens kept per text (longer texts are cut).
        predict_file: a UTF-8 file, one text per line (blank lines skipped, none at all is an
            error), that ``predict`` reads instead of ``predict_split``.
        batch_size, eval_batch_size, num_workers, predict_split: as in ``SplitDataModule``.
    """

    def __init__(
        self,
        tokenizer: TokenizerKind = "word",
        vocab_size: VocabularySize = 8000,
        lowercase: bool = False,
        min_frequency: NonNegativeInt = 1,
        max_length: PositiveInt = 64,
        predict_file: Optional[str] = None,
        batch_size: PositiveInt = 64,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
        predict_split: Split = "test",
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers, predict_split)
        self.tokenizer_kind, self.vocab_size, self.lowercase = tokenizer, vocab_size, lowercase
        self.min_frequency, self.max_length, self.predict_file = min_frequency, max_length, predict_file
        self.tokenizer: Optional[Tokenizer] = None

    def training_texts(self) -> Iterable[str]:
        """The texts the tokeniser learns from (the training split)."""
        return (text for text, _ in self.split("train"))

    def labels(self) -> Sequence[str]:
        """Class names, for classification data; none otherwise."""
        return ()

    def make_collator(self, tokenizer: Tokenizer) -> Callable[[list[Example]], dict[str, Any]]:
        raise TypeError(f"{type(self).__name__} must define make_collator(tokenizer)")

    def _task(self) -> Optional[TokenizerState]:
        module = self.trainer.lightning_module if self.trainer is not None else None
        task = getattr(module, "task", None)
        return task if isinstance(task, TokenizerState) else None

    def resolve_tokenizer(self) -> Tokenizer:
        """The tokeniser of this run: the task's (from a checkpoint) or a new one, given to the task."""
        if self.tokenizer is not None:
            return self.tokenizer
        task = self._task()
        if task is not None and task.tokenizer is not None:
            self.tokenizer = task.tokenizer
            return self.tokenizer
        self.tokenizer = train_tokenizer(
            self.training_texts(), self.tokenizer_kind, self.vocab_size, self.lowercase, self.min_frequency
        )
        if task is not None:
            task.attach(self.tokenizer, self.labels())
        return self.tokenizer

    def loader(self, name: str, shuffle: bool = False) -> DataLoader:
        self.collate_fn = self.make_collator(self.resolve_tokenizer())
        return super().loader(name, shuffle)

    def predict_dataloader(self) -> DataLoader:
        if self.predict_file is None:
            return super().predict_dataloader()
        text = TextFile(self.predict_file, "data.predict_file, a text per line")
        self.setup("predict")
        self.splits["predict_file"] = [(line, None) for _, line in text.numbered()]
        return self.loader("predict_file")
