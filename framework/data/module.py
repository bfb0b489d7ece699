"""A data module whose splits are datasets built once: the loader plumbing every domain shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Optional, get_args

import lightning.pytorch as pl
import torch
from torch.utils.data import Dataset
from torchdata.stateful_dataloader import StatefulDataLoader as DataLoader

from ..values import NonNegativeInt, PositiveInt
from .limits import check_limits, check_validation_interval
from .paths import DataError
from .sampling import EpochShuffle, loader_generator
from .tensors import TensorExamples, collate

#: A split's name, as a config names one (``data.predict_split``).
Split = Literal["train", "val", "test"]
SPLITS: tuple[str, ...] = get_args(Split)


def is_empty(dataset: Dataset) -> bool:
    """Whether a dataset with a length has none (an iterable one is never called empty)."""
    return hasattr(dataset, "__len__") and len(dataset) == 0


class SplitDataModule(pl.LightningDataModule):
    """Base of the domains' data modules: a subclass builds its datasets, this class loads them.

    A subclass implements :meth:`make_splits`, returning ``{"train": ..., "val": ...,
    "test": ...}`` datasets (a missing split is an error only when a loop asks for it), and
    may set ``collate_fn`` (padding, graph batching ...). ``predict`` reads ``predict_split``.

    A split that holds no examples is an error naming where it came from: a reader records the
    files (or folder) of each split in ``sources`` (split -> text), and a split read from files
    that holds nothing is an error as soon as the splits are made; a generated split asked to be
    empty is one when a loader is asked for it. So is a trainer that would run a stage on no
    batch at all (``limit_train_batches=0``, ``max_epochs=0`` ...: :func:`~framework.data.limits.check_limits`).

    Loaders are torchdata's ``StatefulDataLoader``, and the training order of an epoch is a
    function of the run's seed and the epoch (:class:`~framework.data.sampling.EpochShuffle`):
    a checkpoint taken in the middle of an epoch holds the loader's position, so a run resumed
    from any checkpoint continues with the very batches an uninterrupted one would have seen.

    Splits held as tensors (:class:`~framework.data.tensors.TensorExamples`) are batched by
    indexing, and when the trainer runs on a GPU and the loaders have no workers they move
    to the GPU once at set-up, so their batches are made there. Loaders pin host memory
    only for a trainer on a GPU.

    Args:
        batch_size: examples per training batch.
        eval_batch_size: examples per validation/test/predict batch (default ``batch_size``).
        num_workers: loader worker processes (0 = in the main process).
        predict_split: the split that ``predict`` reads.
    """

    collate_fn: Optional[Callable[[list], Any]] = None

    def __init__(
        self,
        batch_size: PositiveInt = 64,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
        predict_split: Split = "test",
    ) -> None:
        super().__init__()
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size or batch_size
        self.num_workers, self.predict_split = num_workers, predict_split
        self.splits: dict[str, Dataset] = {}
        self.sources: dict[str, str] = {}
        self._interval_checked: object = None  # the trainer whose val_check_interval was checked

    def make_splits(self) -> dict[str, Dataset]:
        """The datasets of the splits, by name (``train``, ``val``, ``test``)."""
        raise TypeError(f"{type(self).__name__} must define make_splits(), returning the datasets by split")

    def setup(self, stage: str) -> None:
        trainer = getattr(self, "trainer", None)
        if trainer is not None:
            check_limits(stage, trainer)
        if not self.splits:
            splits = dict(self.make_splits())
            empty = next((name for name, dataset in splits.items() if name in self.sources and is_empty(dataset)), None)
            if empty is not None:
                raise self.empty_split(empty)
            self.splits = splits
        if trainer is not None and stage == "fit" and "train" in self.splits and trainer is not self._interval_checked:
            self._interval_checked = trainer  # the loader below sets this module up again
            check_validation_interval(trainer, len(self.train_dataloader()))
        device = self.device
        if device.type == "cuda" and self.num_workers == 0:
            for dataset in self.splits.values():
                if isinstance(dataset, TensorExamples):
                    dataset.to(device)

    def empty_split(self, name: str) -> DataError:
        """The error of a split ``name`` without examples, naming what it was read from (``sources``)."""
        source = self.sources.get(name)
        where = f"read from {source}" if source else f"made by {type(self).__name__}"
        return DataError(f"the {name} split is empty ({where}): a run needs examples in every split")

    @property
    def device(self) -> torch.device:
        """The device the trainer trains on (the CPU without a trainer)."""
        trainer = getattr(self, "trainer", None)
        return trainer.strategy.root_device if trainer is not None else torch.device("cpu")

    def split(self, name: str) -> Dataset:
        """The dataset of one split; a clear error when the data module has none."""
        self.setup("fit")
        if name not in self.splits:
            raise KeyError(f"{type(self).__name__} has no {name!r} split; it has {sorted(self.splits)}")
        return self.splits[name]

    def loader(self, name: str, shuffle: bool = False, sampler: Optional[EpochShuffle] = None) -> DataLoader:
        """A DataLoader over one split, with this module's batch size, workers and collate;
        ``shuffle`` (training) draws the order with :class:`EpochShuffle`, or with ``sampler``
        (an order of its own, such as a :class:`~framework.data.sampling.LengthGroupedShuffle`)."""
        dataset = self.split(name)
        if is_empty(dataset):
            raise self.empty_split(name)
        on_host = not isinstance(dataset, TensorExamples) or dataset.device.type == "cpu"
        if shuffle and sampler is None:
            sampler = EpochShuffle(len(dataset))
        return DataLoader(
            dataset,
            batch_size=self.batch_size if shuffle or sampler is not None else self.eval_batch_size,
            sampler=sampler,
            generator=loader_generator(),
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            pin_memory=on_host and self.device.type == "cuda",
            collate_fn=self.collate_fn or collate,
        )

    def train_dataloader(self) -> DataLoader:
        return self.loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self.loader("val")

    def test_dataloader(self) -> DataLoader:
        return self.loader("test")

    def predict_dataloader(self) -> DataLoader:
        return self.loader(self.predict_split)
