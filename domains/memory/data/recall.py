"""Associative recall of bit vectors (Graves, Wayne & Danihelka, Neural Turing Machines, 2014, §4.3):
a generated algorithmic task, no data folder.

An example shows n items, each ``item_length`` vectors of ``bits`` random bits behind an item
delimiter, then one of the first n - 1 items again between two query delimiters; the answer is
the item that followed it::

    step   |d| x x x |d| x x x | ... |q| x x x |q|      ->  the item after the queried one
    bits    0  b b b  0  b b b       0  b b b  0
    item    1  0 0 0  1  0 0 0       0  0 0 0  0
    query   0  0 0 0  0  0 0 0       1  0 0 0  1

A batch is a mapping::

    inputs  (B, T, bits + 2) float   the steps, right-padded with zeros
    mask    (B, T)           bool    the real steps
    target  (B, item_length, bits) float
"""

from __future__ import annotations

import torch

from framework.data import GeneratedSplits, TensorExamples
from framework.errors import ConfigError
from framework.values import PositiveInt, Seed, declare

#: Items of an example: one to ask and the one after it, at least.
ItemCount = declare("ItemCount", int, "an int >= 2 (an item to ask and the one after it)", low=2)


class RecallSequences(TensorExamples):
    """``size`` examples of associative recall drawn from ``seed`` (see the module's docstring)."""

    fields = ("inputs", "mask", "target")

    def __init__(self, size: int, bits: int, item_length: int, min_items: int, max_items: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        span = item_length + 1  # a delimiter and the item's vectors
        items = torch.randint(min_items, max_items + 1, (size,), generator=g)
        contents = torch.randint(0, 2, (size, max_items, item_length, bits), generator=g).float()
        asked = (torch.rand(size, generator=g) * (items - 1)).long()  # an item that has a successor
        rows = torch.arange(size)
        steps = max_items * span + item_length + 2
        self.inputs = torch.zeros(size, steps, bits + 2)
        for i in range(max_items):  # item i: its delimiter, then its vectors
            present = i < items
            self.inputs[present, i * span, bits] = 1.0
            self.inputs[present, i * span + 1 : (i + 1) * span, :bits] = contents[present, i]
        start = items * span  # the query: delimiter, the asked item, delimiter
        self.inputs[rows, start, bits + 1] = 1.0
        for j in range(item_length):
            self.inputs[rows, start + 1 + j, :bits] = contents[rows, asked, j]
        self.inputs[rows, start + span, bits + 1] = 1.0
        self.mask = torch.arange(steps) < (start + span + 1).unsqueeze(1)
        self.target = contents[rows, asked + 1]


class AssociativeRecallBits(GeneratedSplits):
    """Generated associative recall of bit vectors: train, val and test splits from one seed
    (``GeneratedSplits``).

    The paper's set-up is 6 bits, items of 3 vectors, 2 to 6 items.

    Args:
        bits: bits per vector.
        item_length: vectors per item.
        min_items, max_items: items per example (at least 2: one to ask, one to answer).
        train_size, val_size, test_size: examples per split.
        batch_size: examples per batch.
        seed: the seed of the train split (val and test draw from seed + 1 and seed + 2).
    """

    def __init__(
        self,
        bits: PositiveInt = 6,
        item_length: PositiveInt = 3,
        min_items: ItemCount = 2,
        max_items: ItemCount = 6,
        train_size: PositiveInt = 8000,
        val_size: PositiveInt = 1000,
        test_size: PositiveInt = 1000,
        batch_size: PositiveInt = 32,
        seed: Seed = 0,
    ) -> None:
        super().__init__(train_size, val_size, test_size, seed, batch_size)
        if min_items > max_items:
            raise ConfigError(f"data: need min_items <= max_items, got min_items={min_items}, max_items={max_items}")
        self.save_hyperparameters()
        self.bits, self.item_length = bits, item_length

    def generate(self, size: int, seed: int) -> RecallSequences:
        h = self.hparams
        return RecallSequences(size, h.bits, h.item_length, h.min_items, h.max_items, seed)
