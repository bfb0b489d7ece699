"""Generated long texts whose label needs two words far apart: long-range matching.

A text is a stream of filler words (``w0`` ... ``w99``) of a length drawn between
``min_length`` and ``max_length`` words, in which two key words are hidden: ``k<i>`` in the
first quarter of the text and ``k<j>`` in the last quarter (i, j in 0 .. keys - 1). The label
is ``same`` when i = j and ``different`` otherwise, half of the texts each::

    w17 w3 k5 w88 w41 ... (hundreds of fillers) ... w2 k5 w60 w9  -> same

A model must bring the two key words together, across at least half the text: a sum (or a
weighted mean) of per-word features cannot tell i = j from i != j (f(k_i) + f(k_i) > t for
every i forces f(k_i) + f(k_j) > t), so without attention between tokens a classifier only
learns which key words tend to match (at most about 0.64 with 8 keys; measured 0.60); with
it, a key word that finds its twin is the answer. It is the task on which the efficient
self-attention blocks (Linformer, Performer, sparse patterns, adaptive span, Transformer-XL
...) are measured at lengths of 64 to 4096 words.
"""

from __future__ import annotations

import random
from typing import Any

from framework.data import seeded_splits, split_sizes
from framework.errors import ConfigError
from framework.values import NonNegativeInt, PositiveInt, Seed, declare

from .classification import TextClassificationData

LABELS = ("different", "same")
#: A text's length in words (``data.min_length``, ``data.max_length``): a key word in each quarter.
TextLength = declare("TextLength", int, "an int >= 8 (words)", low=8)
#: The key words (``data.keys``): two at least, or no text could be ``different``.
KeyCount = declare("KeyCount", int, "an int >= 2 (key words)", low=2)


def long_range_text(rng: random.Random, length: int, keys: int = 8, fillers: int = 100) -> tuple[str, str]:
    """One generated ``(text, label)`` of ``length`` words (at least 8)."""
    words = [f"w{rng.randrange(fillers)}" for _ in range(length)]
    first = rng.randrange(keys)
    same = rng.random() < 0.5
    second = first if same else rng.choice([k for k in range(keys) if k != first])
    quarter = length // 4
    words[rng.randrange(quarter)] = f"k{first}"
    words[length - 1 - rng.randrange(quarter)] = f"k{second}"
    return " ".join(words), LABELS[same]


class LongRangeMatch(TextClassificationData):
    """Long-range matching texts (no data folder): train, val and test from ``seed``, ``seed + 1``,
    ``seed + 2`` (:func:`framework.data.seeded_splits`); every text's length is drawn uniformly
    from [min_length, max_length].

    Args:
        min_length, max_length: the shortest and the longest text, in words (8 <= min <= max).
            ``max_length`` is also the tokens kept per text (the model's ``max_len`` must
            reach it).
        keys: K, the key words (k0 .. k{K-1}; K >= 2).
        fillers: the filler vocabulary (w0 .. w{fillers-1}).
        train_size, val_size, test_size: texts per split.
        seed: the seed of the train split.
        **kwargs: tokeniser and loader options of ``TextClassificationData`` (a word tokeniser
            with a vocabulary of at least fillers + K + its special tokens).
    """

    def __init__(
        self,
        min_length: TextLength = 64,
        max_length: TextLength = 256,
        keys: KeyCount = 8,
        fillers: PositiveInt = 100,
        train_size: NonNegativeInt = 2000,
        val_size: NonNegativeInt = 250,
        test_size: NonNegativeInt = 250,
        seed: Seed = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(max_length=max_length, **kwargs)
        if min_length > max_length:
            raise ConfigError(f"data.min_length must be at most data.max_length={max_length}, got {min_length}")
        self.min_length, self.keys, self.fillers, self.seed = min_length, keys, fillers, seed
        self.sizes = split_sizes(train_size, val_size, test_size)

    def texts(self, size: int, seed: int) -> list[tuple[str, str]]:
        """``size`` generated ``(text, label)`` pairs, drawn from ``seed``."""
        rng = random.Random(seed)
        return [
            long_range_text(rng, rng.randint(self.min_length, self.max_length), self.keys, self.fillers)
            for _ in range(size)
        ]

    def read(self) -> dict[str, list[tuple[str, str]]]:
        return seeded_splits(self.sizes, self.seed, self.texts)

    def label_order(self, names: set[str]) -> list[str]:
        return list(LABELS)
