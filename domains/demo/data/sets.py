"""Counting the distinct elements of a set: a generated task on sets, no data folder.

An example is an unordered set (a multiset) of tokens; the answer is how many distinct tokens
it holds (Lee et al., Set Transformer, ICML 2019, §5.2 count the distinct characters of a set
of Omniglot images; here the elements are tokens)::

    {7, 3, 7, 12, 3, 3}      ->  3 distinct  (class 2)

Every element must be compared with the others: a sum or mean of per-element features
counts the distinct elements only if it can hold the whole histogram, which a width smaller
than the vocabulary cannot. The set sizes vary, so batches carry a padding mask.
"""

from __future__ import annotations

import torch

from framework.data import GeneratedSplits, TensorExamples
from framework.errors import ConfigError
from framework.values import ClassCount, NonNegativeInt, PositiveInt, Seed


class UniqueCountDataset(TensorExamples):
    """``size`` sets drawn from ``seed``; each is a dict of tokens (B, max_size), mask and target.

    The number of distinct tokens u is uniform on 1 .. max_unique (the class is u - 1), the
    set size uniform on max(u, min_size) .. max_size; the u tokens are distinct draws from the
    vocabulary, each present once and the rest of the set drawn from them, in random order.
    Padding is the id ``num_tokens``.
    """

    fields = ("tokens", "mask", "target")

    def __init__(self, size: int, num_tokens: int, min_size: int, max_size: int, max_unique: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        unique = torch.randint(1, max_unique + 1, (size,), generator=g)
        lowest = unique.clamp(min=min_size)
        sizes = lowest + (torch.rand(size, generator=g) * (max_size - lowest + 1)).long()
        values = torch.rand(size, num_tokens, generator=g).argsort(-1)[:, :max_unique]  # distinct tokens
        places = torch.arange(max_size)
        # element j < u is token j (each distinct token once); the others repeat a random one of them
        picks = torch.where(
            places < unique.unsqueeze(1), places, (torch.rand(size, max_size, generator=g) * unique.unsqueeze(1)).long()
        )
        order = torch.rand(size, max_size, generator=g).masked_fill(places >= sizes.unsqueeze(1), 2.0).argsort(-1)
        self.mask = places < sizes.unsqueeze(1)
        self.tokens = torch.where(self.mask, values.gather(1, picks.gather(1, order)), num_tokens)
        self.target = unique - 1


class UniqueCount(GeneratedSplits):
    """Generated sets whose distinct elements are counted: train, val and test splits from one seed
    (``GeneratedSplits``).

    Args:
        num_tokens: distinct tokens the sets draw from (the padding id is ``num_tokens``).
        min_size, max_size: elements per set.
        max_unique: the most distinct elements, and the number of classes (two at least).
        train_size, val_size, test_size: sets per split.
        batch_size: sets per batch.
        seed: the seed of the train split (val and test draw from seed + 1 and seed + 2).

    Attributes:
        vocab_size: ``num_tokens + 1``, the tokens and padding (the model's embedding rows).
        num_classes: ``max_unique`` (class c is c + 1 distinct elements).
    """

    def __init__(
        self,
        num_tokens: PositiveInt = 100,
        min_size: PositiveInt = 6,
        max_size: PositiveInt = 20,
        max_unique: ClassCount = 10,
        train_size: NonNegativeInt = 8000,
        val_size: NonNegativeInt = 1000,
        test_size: NonNegativeInt = 1000,
        batch_size: PositiveInt = 64,
        seed: Seed = 0,
    ) -> None:
        super().__init__(train_size, val_size, test_size, seed, batch_size)
        if min_size > max_size:
            raise ConfigError(f"data: need min_size <= max_size, got min_size={min_size}, max_size={max_size}")
        if max_unique > min(max_size, num_tokens):
            raise ConfigError(
                f"data.max_unique must be at most min(max_size, num_tokens) = {min(max_size, num_tokens)}, "
                f"got {max_unique}"
            )
        self.save_hyperparameters()
        self.vocab_size = num_tokens + 1  # the tokens and padding: what model.vocab_size must hold
        self.num_classes = max_unique

    def generate(self, size: int, seed: int) -> UniqueCountDataset:
        h = self.hparams
        return UniqueCountDataset(size, h.num_tokens, h.min_size, h.max_size, h.max_unique, seed)
