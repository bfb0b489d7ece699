"""Generated splits: split i of train, val, test draws from seed + i, in the core and in every
generated data module (the README's measured figures rest on the data staying the same)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.utils.data import Dataset

from domains.audio import AudioEvents, DigitStrings
from domains.demo import AssociativeRecall, UniqueCount
from domains.memory import AssociativeRecallBits, GeneratedStories
from domains.nlp import GeneratedReviews, LongRangeMatch, NumberSorting
from framework.data import SPLITS, GeneratedSplits, SplitDataModule, seeded_splits, split_seed, split_sizes
from framework.errors import ConfigError


def test_split_i_draws_from_seed_plus_i_whatever_the_order_of_the_sizes():
    drawn = seeded_splits({"test": 3, "train": 5, "val": 4}, 10, lambda size, seed: (size, seed))
    assert drawn == {"train": (5, 10), "val": (4, 11), "test": (3, 12)}
    assert [split_seed(7, split) for split in SPLITS] == [7, 8, 9]


def test_split_sizes_name_the_splits_and_refuse_a_negative_one():
    assert split_sizes(8, 0, 2) == {"train": 8, "val": 0, "test": 2}
    with pytest.raises(ConfigError, match=r"data.train_size, val_size and test_size must be >= 0, got 8, -1, 2"):
        split_sizes(8, -1, 2)


class Draws(GeneratedSplits):
    """The smallest generated data module: ``size`` numbers drawn from ``seed``."""

    def generate(self, size: int, seed: int) -> list[float]:
        return torch.rand(size, generator=torch.Generator().manual_seed(seed)).tolist()


def test_a_generated_module_states_its_sizes_and_implements_generate_only():
    data = Draws(train_size=6, val_size=3, test_size=0, seed=4)
    data.setup("fit")
    assert {name: len(split) for name, split in data.splits.items()} == {"train": 6, "val": 3, "test": 0}
    assert data.split("val") == Draws(3, 0, 0, seed=5).split("train")
    with pytest.raises(ConfigError, match="must be >= 0"):
        Draws(1, 1, -1)
    with pytest.raises(TypeError, match="must define generate"):
        GeneratedSplits(1, 1, 1).make_splits()


def examples(dataset: Dataset) -> list[Any]:
    return [dataset[i] for i in range(len(dataset))]


def same(a: Any, b: Any) -> bool:
    """Equal examples: tensors bit for bit, containers item by item."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


SIZE = 4
GENERATED: dict[str, Callable[..., SplitDataModule]] = {
    "demo.AssociativeRecall": AssociativeRecall,
    "demo.UniqueCount": UniqueCount,
    "memory.AssociativeRecallBits": AssociativeRecallBits,
    "memory.GeneratedStories": GeneratedStories,
    "nlp.NumberSorting": NumberSorting,
    "nlp.GeneratedReviews": GeneratedReviews,
    "nlp.LongRangeMatch": lambda **sizes: LongRangeMatch(min_length=16, max_length=24, **sizes),
    "audio.AudioEvents": lambda **sizes: AudioEvents(duration=0.3, **sizes),
    "audio.DigitStrings": lambda **sizes: DigitStrings(source="events", events_per_digit=1, max_digits=3, **sizes),
}


@pytest.mark.parametrize("make", GENERATED.values(), ids=GENERATED.keys())
def test_every_generated_module_draws_split_i_from_seed_plus_i(make):
    """Split i of seed s is the train split of seed s + i (the same size): the splits of one
    module are independent draws, and none of them changes when the helper is used."""
    splits = {seed: make(train_size=SIZE, val_size=SIZE, test_size=SIZE, seed=seed).make_splits() for seed in (3, 4, 5)}
    drawn = {split: examples(splits[3][split]) for split in SPLITS}
    for i, split in enumerate(SPLITS):
        assert same(drawn[split], examples(splits[3 + i]["train"])), split
    assert not same(drawn["train"], drawn["val"]) and not same(drawn["val"], drawn["test"])
