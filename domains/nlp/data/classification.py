"""Text classification data: labelled texts as flat token sequences or as sentences of words."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any, Optional

import torch
from tokenizers import Tokenizer

from framework.errors import ConfigError
from framework.values import NonNegativeInt, PositiveInt

from .base import Example, TextData, pad
from .tokenization import PAD, UNK

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text: it is cut after ``.``, ``!`` or ``?`` followed by white space."""
    return [s for s in (part.strip() for part in _SENTENCE_END.split(text)) if s]


def holdout(
    examples: Sequence[Example], size: int, seed: int, key: str = "data.val_size"
) -> tuple[list[Example], list[Example]]:
    """``(rest, held out)``: ``size`` examples drawn with ``seed`` for a validation split."""
    if not 0 < size < len(examples):
        raise ConfigError(f"{key} must be between 1 and {len(examples) - 1} (the training examples), got {size}")
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    held = set(order[:size])
    return [e for i, e in enumerate(examples) if i not in held], [examples[i] for i in sorted(held)]


class ClassificationCollator:
    """Labelled texts -> a batch ``{"tokens", "mask", "target"}``.

    Flat: tokens and mask (B, N). With ``sentences``: (B, S, W), each text cut into
    sentences (:func:`split_sentences`), at most ``max_sentences`` of ``max_length`` words.
    A text without tokens becomes one ``<unk>``, so that every example has a position.
    With ``characters`` > 0 (flat batches only) the batch also holds ``chars`` (B, N, C): the
    first C UTF-8 bytes of each token's text (lower-cased with ``lowercase``) as ids byte + 1,
    0 = padding (``tokenization.CHARACTER_VOCAB``), so that unknown words keep their spelling.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        max_length: int,
        sentences: bool = False,
        max_sentences: int = 16,
        characters: int = 0,
        lowercase: bool = False,
    ) -> None:
        self.tokenizer, self.max_length = tokenizer, max_length
        self.sentences, self.max_sentences = sentences, max_sentences
        self.characters, self.lowercase = characters, lowercase

    def _encode(self, texts: list[str]) -> list[list[int]]:
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        return [e.ids[: self.max_length] or [UNK] for e in encodings]

    def _characters(self, texts: list[str], length: int) -> torch.Tensor:
        """(B, length, C) byte ids of each token's span of its text (``<unk>`` of an empty text: none)."""
        chars = torch.zeros(len(texts), length, self.characters, dtype=torch.long)
        for row, (text, encoding) in enumerate(
            zip(texts, self.tokenizer.encode_batch(texts, add_special_tokens=False))
        ):
            for place, (start, end) in enumerate(encoding.offsets[: self.max_length]):
                word = text[start:end].lower() if self.lowercase else text[start:end]
                spelling = list(word.encode("utf-8"))[: self.characters]
                chars[row, place, : len(spelling)] = torch.tensor(spelling, dtype=torch.long) + 1
        return chars

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
            if self.characters:
                batch["chars"] = self._characters(texts, tokens.shape[1])
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
        characters: C > 0 adds ``chars`` (B, N, C), the first C bytes of each token
            (character-level models); flat batches only (0 with ``sentences``).
        **kwargs: tokeniser and loader options of :class:`~domains.nlp.data.TextData`.
    """

    def __init__(
        self, sentences: bool = False, max_sentences: PositiveInt = 16, characters: NonNegativeInt = 0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if characters and sentences:
            raise ConfigError(
                f"data.characters must be 0 with data.sentences=true (characters come with flat batches), "
                f"got {characters}"
            )
        self.sentences, self.max_sentences, self.characters = sentences, max_sentences, characters
        self._labels: Optional[list[str]] = None

    def read(self) -> dict[str, list[tuple[str, str]]]:
        raise TypeError(f"{type(self).__name__} must define read(), returning the labelled texts by split")

    def label_order(self, names: set[str]) -> list[str]:
        return sorted(names)

    def labels(self) -> list[str]:
        self.setup("fit")
        return list(self._labels or ())

    @property
    def num_classes(self) -> Optional[int]:
        """The number of labels, once set up (the size the CLI gives ``model.num_classes`` and
        ``task.num_classes`` when a config leaves them unset)."""
        return None if self._labels is None else len(self._labels)

    def make_splits(self) -> dict[str, list[Example]]:
        named = self.read()
        self._labels = self.label_order({label for examples in named.values() for _, label in examples})
        index = {name: i for i, name in enumerate(self._labels)}
        return {split: [(text, index[label]) for text, label in examples] for split, examples in named.items()}

    def make_collator(self, tokenizer: Tokenizer) -> ClassificationCollator:
        return ClassificationCollator(
            tokenizer, self.max_length, self.sentences, self.max_sentences, self.characters, self.lowercase
        )
