"""Generated data sets: every split drawn from a seed of its own, by one rule written once.

Split i of :data:`~framework.data.module.SPLITS` draws from ``seed + i`` (train from ``seed``,
val from ``seed + 1``, test from ``seed + 2``), so the splits never share a stream, and the
examples of one split do not change when another split's size does::

    seeded_splits({"train": 8000, "val": 1000, "test": 1000}, 0, lambda size, seed: Examples(size, seed))
    # {"train": Examples(8000, 0), "val": Examples(1000, 1), "test": Examples(1000, 2)}

A data module of its own (:class:`GeneratedSplits`) implements ``generate(size, seed)``; a
data module whose base class builds the splits from something else (labelled texts, stories,
audio clips ...) takes its sizes with :func:`split_sizes` and calls :func:`seeded_splits` from
that base class's hook.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Optional, TypeVar

from torch.utils.data import Dataset

from ..errors import ConfigError
from ..values import NonNegativeInt, PositiveInt, Seed
from .module import SPLITS, SplitDataModule

T = TypeVar("T")


def split_sizes(train_size: int, val_size: int, test_size: int) -> dict[str, int]:
    """``{"train": train_size, "val": val_size, "test": test_size}``; a ``ConfigError`` when one is negative."""
    if min(train_size, val_size, test_size) < 0:
        raise ConfigError(
            f"data.train_size, val_size and test_size must be >= 0, got {train_size}, {val_size}, {test_size}"
        )
    return {"train": train_size, "val": val_size, "test": test_size}


def split_seed(seed: int, split: str) -> int:
    """The seed of a generated split: ``seed + i`` for split i of :data:`SPLITS` (train, val, test)."""
    return seed + SPLITS.index(split)


def seeded_splits(sizes: Mapping[str, int], seed: int, generate: Callable[[int, int], T]) -> dict[str, T]:
    """``{split: generate(size, split_seed(seed, split))}`` for each ``split: size`` of ``sizes``."""
    return {split: generate(size, split_seed(seed, split)) for split, size in sizes.items()}


class GeneratedSplits(SplitDataModule):
    """Base of a generated data module (no data folder): train, val and test of the sizes it
    states, drawn from ``seed``, ``seed + 1`` and ``seed + 2`` (:func:`seeded_splits`).

    A subclass implements :meth:`generate`, returning the dataset of ``size`` examples drawn
    from one seed. A split of size 0 is allowed, and an error when a loop asks for it.

    Args:
        train_size, val_size, test_size: examples per split (at least 0).
        seed: the seed of the train split (val and test draw from the next two).
        batch_size, eval_batch_size, num_workers: as in :class:`SplitDataModule`.

    Attributes:
        sizes: ``{"train": train_size, "val": val_size, "test": test_size}``.
        seed: ``seed``.
    """

    def __init__(
        self,
        train_size: NonNegativeInt,
        val_size: NonNegativeInt,
        test_size: NonNegativeInt,
        seed: Seed = 0,
        batch_size: PositiveInt = 64,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        self.sizes, self.seed = split_sizes(train_size, val_size, test_size), seed

    def generate(self, size: int, seed: int) -> Dataset:
        """The dataset of ``size`` examples drawn from ``seed`` (one split's)."""
        raise TypeError(f"{type(self).__name__} must define generate(size, seed), returning one split's dataset")

    def make_splits(self) -> dict[str, Dataset]:
        return seeded_splits(self.sizes, self.seed, self.generate)
