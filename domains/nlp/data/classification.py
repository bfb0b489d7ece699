"""Text classification data: labelled texts as flat token sequences or as sentences of words."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any, Optional

import torch
from tokenizers import Tokenizer

from .base import Example, TextData, pad
from .tokenization import PAD, UNK

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text: it is cut after ``.``, ``!`` or ``?`` followed by white space."""
    return [s for s in (part.strip() for part in _SENTENCE_END.split(text)) if s]


def holdout(examples: Sequence[Example], size: int, seed: int, key: str = "data.val_size") -> tuple[list[Example], list[Example]]:
    """``(rest, held out)``: ``size`` examples drawn with ``seed`` for a validation split."""
    if not 0 < size < len(examples):
        raise ValueError(f"{key} must be between 1 and {len(examples) - 1} (the training examples), got {size}")
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    held = set(order[:size])
    return [e for i, e in enumerate(examples) if i not in held], [examples[i] for i in sorted(held)]


class ClassificationCollator:
    """Labelled texts -> a batch ``{"tokens", "mask", "target"}``.

    Flat: tokens and mask (B, N). With ``sentences``: (B, S, W), each text cut into
    sentences (:func:`split_sentences`), at most ``max_sentences`` of ``max_length`` words.
    A text without tokens becomes one ``<unk>``, so that every example has a position.
    """

    def __init__(self, tokenizer: Tokenizer, max_length: int, sentences: bool = False, max_sentences: int = 16) -> None:
        self.tokenizer, self.max_length = tokenizer, max_length
        self.sentences, self.max_sentences = sentences, max_sentences

    def _encode(self, texts: list[str]) -> list[list[int]]:
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        return [e.ids[: self.max_length] or [UNK] for e in encodings]

    def __call__(self, examples: list[Example]) -> dict[str, Any]:
        texts = [text for text, _ in examples]
        if self.sentences:
            documents = [split_sentences(t)[: self.max_sentences] or [t] for t in texts]
            flat = self._encode([s for d in documents for s in d])
            longest = max(len(ids) for ids in flat)
            tokens = torch.zeros(len(texts), max(len(d) for d in documents), longest, dtype=torch.long)
            start = 0
            for row, document in enumerate(documents):
                tokens[row, : len(document)] = pad(flat[start : start + len(document)], longest)[0]
                start += len(document)
            batch = {"tokens": tokens, "mask": tokens != PAD}
        else:
            tokens, mask = pad(self._encode(texts))
            batch = {"tokens": tokens, "mask": mask}
        if examples[0][1] is not None:
            batch["target"] = torch.tensor([label for _, label in examples], dtype=torch.long)
        return batch


class TextClassificationData(TextData):
    """Base of the labelled-text data modules: a subclass returns ``{split: [(text, label
    name), ...]}`` from :meth:`read`; labels become indices in :meth:`labels` order (the
    sorted names of all splits unless the subclass fixes them).

    Args:
        sentences: batches of (B, S, W) sentences of words (hierarchical models) instead
            of (B, N) token sequences.
        max_sentences: sentences kept per text with ``sentences``.
        **kwargs: tokeniser and loader options of :class:`~domains.nlp.data.TextData`.
    """

    def __init__(self, sentences: bool = False, max_sentences: int = 16, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sentences, self.max_sentences = sentences, max_sentences
        self._labels: Optional[list[str]] = None

    def read(self) -> dict[str, list[tuple[str, str]]]:
        raise TypeError(f"{type(self).__name__} must define read(), returning the labelled texts by split")

    def label_order(self, names: set[str]) -> list[str]:
        return sorted(names)

    def labels(self) -> list[str]:
        self.setup("fit")
        return list(self._labels or ())

    def make_splits(self) -> dict[str, list[Example]]:
        named = self.read()
        self._labels = self.label_order({label for examples in named.values() for _, label in examples})
        index = {name: i for i, name in enumerate(self._labels)}
        return {split: [(text, index[label]) for text, label in examples] for split, examples in named.items()}

    def make_collator(self, tokenizer: Tokenizer) -> ClassificationCollator:
        return ClassificationCollator(tokenizer, self.max_length, self.sentences, self.max_sentences)
