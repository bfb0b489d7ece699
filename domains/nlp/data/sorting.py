"""Number sorting, generated: the ordering task of pointer networks (Vinyals et al., NeurIPS 2015).

An example is a list of 5 to 10 numbers drawn uniformly from [0, 1); its answer is the
permutation of its positions that sorts it ascending::

    values  0.62 0.05 0.91 0.33          ->   target  1 3 0 2   (0.05, 0.33, 0.62, 0.91)

The output classes are the input's positions, a different set for every length, which is
what a pointer network's attention over the input provides and a fixed output layer does not.
"""

from __future__ import annotations

from typing import Optional

import torch

from framework.data import GeneratedSplits, TensorExamples
from framework.errors import ConfigError
from framework.values import NonNegativeInt, PositiveInt, Seed

IGNORE = -100  # target of the output steps beyond an example's length


class SortingExamples(TensorExamples):
    """``size`` lists, from ``seed``: values (S, N) float (0 beyond the length), mask (S, N)
    bool (True = a real number), target (S, N) long, the sorting permutation (``IGNORE``
    beyond the length); N = ``max_length``."""

    fields = ("values", "mask", "target")

    def __init__(self, size: int, min_length: int, max_length: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        lengths = torch.randint(min_length, max_length + 1, (size,), generator=generator)
        self.mask = torch.arange(max_length) < lengths.unsqueeze(1)
        self.values = torch.rand(size, max_length, generator=generator) * self.mask
        order = self.values.masked_fill(~self.mask, 2.0).argsort(-1)  # padding sorts last
        self.target = order.masked_fill(~self.mask, IGNORE)


class NumberSorting(GeneratedSplits):
    """Generated sorting lists (no data folder): train, val and test from ``seed``, ``seed + 1``, ``seed + 2``
    (``GeneratedSplits``).

    Batches: ``{"values": (B, N), "mask": (B, N), "target": (B, N)}``, N = ``max_length``.

    Args:
        train_size, val_size, test_size: lists per split.
        min_length, max_length: the range of list lengths (both included).
        seed: the seed of the train split.
        batch_size, eval_batch_size, num_workers: as in SplitDataModule.
    """

    def __init__(
        self,
        train_size: NonNegativeInt = 20000,
        val_size: NonNegativeInt = 1000,
        test_size: NonNegativeInt = 1000,
        min_length: PositiveInt = 5,
        max_length: PositiveInt = 10,
        seed: Seed = 0,
        batch_size: PositiveInt = 128,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(train_size, val_size, test_size, seed, batch_size, eval_batch_size, num_workers)
        if min_length > max_length:
            raise ConfigError(
                f"data.min_length and data.max_length must satisfy min_length <= max_length, got "
                f"{min_length} and {max_length}"
            )
        self.min_length, self.max_length = min_length, max_length

    def generate(self, size: int, seed: int) -> SortingExamples:
        return SortingExamples(size, self.min_length, self.max_length, seed)
