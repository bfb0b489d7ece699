"""Associative recall: a generated task that needs attention, and no data folder.

An example lists key-value pairs, one token per pair, and ends with a query key::

    (k3,v7) (k0,v2) (k9,v5) ?k0      ->  2

The answer is the value of the pair whose key matches the query: a content-based look-up
that one attention layer performs, and that a model without attention cannot (it stays near
chance, 1 / V). The number of pairs varies, so batches carry a padding mask. The evidence is
known by construction: batches mark the queried pair as ``gold``, which ``evaluate`` and the
attention-training options (``task.attention_supervision`` ...) read.
"""

from __future__ import annotations

import torch

from framework.data import GeneratedSplits, TensorExamples
from framework.errors import ConfigError
from framework.values import ClassCount, NonNegativeInt, PositiveInt, Seed


class RecallDataset(TensorExamples):
    """``size`` examples generated from ``seed``; each is a dict of tokens, mask, target and gold.

    Tokens: pair (k, v) is ``k * num_values + v``; the query for key k is
    ``num_keys * num_values + k``; padding is the last id, ``num_keys * (num_values + 1)``.
    Gold (bool, the tokens' shape): the queried pair.
    """

    fields = ("tokens", "mask", "target", "gold")

    def __init__(self, size: int, num_keys: int, num_values: int, min_pairs: int, max_pairs: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        pairs = torch.randint(min_pairs, max_pairs + 1, (size,), generator=g)
        keys = torch.rand(size, num_keys, generator=g).argsort(-1)[:, :max_pairs]  # distinct keys
        values = torch.randint(num_values, (size, max_pairs), generator=g)
        asked = (torch.rand(size, generator=g) * pairs).long()
        rows, pad = torch.arange(size), num_keys * (num_values + 1)
        self.mask = torch.arange(max_pairs + 1) <= pairs.unsqueeze(1)  # the pairs and the query
        self.tokens = torch.full((size, max_pairs + 1), pad)
        self.tokens[:, :max_pairs] = torch.where(self.mask[:, :max_pairs], keys * num_values + values, pad)
        self.tokens[rows, pairs] = num_keys * num_values + keys[rows, asked]
        self.target = values[rows, asked]
        self.gold = torch.zeros_like(self.mask)
        self.gold[rows, asked] = True


class AssociativeRecall(GeneratedSplits):
    """Generated associative-recall data: train, val and test splits from one seed (``GeneratedSplits``).

    Args:
        num_keys, num_values: vocabulary of keys and of values (the classes: two at least).
        min_pairs, max_pairs: pairs per example.
        train_size, val_size, test_size: examples per split.
        batch_size: examples per batch.
        seed: the seed of the train split (val and test draw from seed + 1 and seed + 2).
    """

    def __init__(
        self,
        num_keys: PositiveInt = 16,
        num_values: ClassCount = 10,
        min_pairs: PositiveInt = 3,
        max_pairs: PositiveInt = 8,
        train_size: NonNegativeInt = 8000,
        val_size: NonNegativeInt = 1000,
        test_size: NonNegativeInt = 1000,
        batch_size: PositiveInt = 64,
        seed: Seed = 0,
    ) -> None:
        super().__init__(train_size, val_size, test_size, seed, batch_size)
        if not min_pairs <= max_pairs <= num_keys:
            raise ConfigError(
                f"data: need 1 <= min_pairs <= max_pairs <= num_keys, got {min_pairs}, {max_pairs}, {num_keys}"
            )
        self.save_hyperparameters()
        self.vocab_size = num_keys * (num_values + 1) + 1  # pairs, queries, padding
        self.num_classes = num_values
        self.gold_evidence = True  # batches mark the queried pair (the task's attention options read it)

    def generate(self, size: int, seed: int) -> RecallDataset:
        h = self.hparams
        return RecallDataset(size, h.num_keys, h.num_values, h.min_pairs, h.max_pairs, seed)
