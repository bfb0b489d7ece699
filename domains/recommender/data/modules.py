"""Sequential-recommendation data modules: leave-one-out splits of user histories.

Every module yields the same batches (see :mod:`.datasets`): training rows
``{"sequence"}`` and ranking queries ``{"history", "target", "seen", "negatives", "user"}``
for validation (the second-to-last item) and test (the last item).

Set-up comes in two parts. :meth:`~SequenceData.setup` reads and indexes the histories and
cuts the padded rows (vectorised: about a second for 300,000 interactions), and knows the item
count, so the task can check the model against it at once. The negatives of the sampled
protocol are drawn on first use (the first evaluation loader, or ``data.negatives``), once
per data module, and shared by the validation and the test queries; a module that reads a
file keeps them in a cache keyed by the histories' content (:mod:`.negatives`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from lightning.pytorch.utilities import rank_zero_info
from torch import Tensor
from torch.utils.data import Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

from framework.data import DataError, SplitDataModule, dataset_dir
from framework.data.module import Split
from framework.data.sampling import LengthGroupedShuffle
from framework.values import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Probability, Seed, declare

from .datasets import RankingQueries, TrainSequences, flatten
from .generated import taste_histories
from .interactions import Histories, filter_min_counts, index_items, read_movielens, read_user_item_lines
from .negatives import cached_negatives, sample_negatives

#: Batches per pool sorted by length when training batches are grouped by length.
LENGTH_POOL = 50

#: The fewest interactions of a user (or items of a history): leave-one-out needs a training, a
#: validation and a test item.
LeaveOneOut = declare(
    "LeaveOneOut", int, "an int >= 3 (leave-one-out: a training, a validation and a test item)", low=3
)


def counts(histories: Histories) -> dict[str, int]:
    """Users, distinct items and interactions of some histories."""
    items = np.unique(np.concatenate(histories)) if histories else ()
    return {"users": len(histories), "items": len(items), "interactions": int(sum(map(len, histories)))}


class SequenceData(SplitDataModule):
    """Base of the recommender data modules; a subclass returns histories from :meth:`load`.

    After ``setup``: ``num_users``, ``num_items`` and ``num_interactions`` (what the splits
    hold), ``train_items`` (every training interaction's item, flat: what a count-based model
    counts) and, for a module that reads a log, ``read_counts`` (what the file held before
    any filtering). A line at set-up says the same.

    Args:
        max_len: items a model sees (the most recent ones); training rows hold ``max_len + 1``.
        num_negatives: items per user for the sampled protocol (uniform over the items the
            user never interacted with, drawn once from ``seed`` on first use; 100 in the
            SASRec paper).
        seed: the seed of the negatives (and of generated data).
        group_by_length: training batches of users with rows of about the same length, in
            random order (:class:`~framework.data.sampling.LengthGroupedShuffle`, sorted within
            random pools of ``LENGTH_POOL`` batches; not under DDP), so that
            short histories are not padded to ``max_len``; false: plain shuffled batches.
        batch_size, eval_batch_size, num_workers, predict_split: as in
            :class:`~framework.data.SplitDataModule`.
    """

    #: Keep the drawn negatives in the cache folder (worth it for data read from files).
    cache_negatives = False

    def __init__(
        self,
        max_len: PositiveInt = 50,
        num_negatives: PositiveInt = 100,
        seed: Seed = 0,
        group_by_length: bool = True,
        batch_size: PositiveInt = 128,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
        predict_split: Split = "test",
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers, predict_split)
        self.group_by_length = group_by_length
        self.max_len, self.num_negatives, self.seed = max_len, num_negatives, seed
        self.num_items: Optional[int] = None
        self.num_users: Optional[int] = None
        self.num_interactions: Optional[int] = None
        self.read_counts: Optional[dict[str, int]] = None
        self.train_items: Optional[Tensor] = None
        self._negatives: Optional[Tensor] = None

    def load(self) -> tuple[Histories, int]:
        """Histories over item ids ``1 .. I`` in time order, and I."""
        raise TypeError(f"{type(self).__name__} must define load(), returning (histories, num_items)")

    def make_splits(self) -> dict[str, Dataset]:
        start = time.perf_counter()
        histories, self.num_items = self.load()
        short = sum(len(h) < 3 for h in histories)
        if short:
            raise ValueError(
                f"leave-one-out needs at least 3 items per user; {short} users have fewer "
                "(raise data.min_user_interactions to 3 or more)"
            )
        self._items, self._offsets = flatten(histories)
        starts, ends = self._offsets[:-1], self._offsets[1:]
        self.num_users, self.num_interactions = len(histories), len(self._items)
        training = torch.ones(len(self._items), dtype=torch.bool)
        training[ends - 1] = training[ends - 2] = False
        self.train_items = self._items[training]
        splits = {
            "train": TrainSequences(self._items, self.max_len, starts, ends - 2),
            "val": RankingQueries(self._items, starts, ends - 2, self.max_len, self.draw_negatives),
            "test": RankingQueries(self._items, starts, ends - 1, self.max_len, self.draw_negatives),
        }
        rank_zero_info(
            f"{type(self).__name__}: {self.summary()}; leave-one-out split; set up in "
            f"{time.perf_counter() - start:.1f} s; {self.num_negatives} uniform negatives per user "
            f"for the sampled protocol, drawn on first use (seed {self.seed})"
        )
        return splits

    def summary(self) -> str:
        """Users, items and interactions kept (and read, for a log)."""
        return f"{self.num_users} users, {self.num_items} items, {self.num_interactions} interactions"

    @property
    def negatives(self) -> Tensor:
        """(U, num_negatives): every user's negatives, drawn on first access (after ``setup``)."""
        self.setup("fit")
        return self.draw_negatives()

    @property
    def negatives_drawn(self) -> bool:
        """Whether the negatives were drawn (or read from the cache) already."""
        return self._negatives is not None

    def draw_negatives(self) -> Tensor:
        """The negatives, drawn (or read from the cache) once; what the ranking queries call."""
        if self._negatives is None:
            start = time.perf_counter()
            histories = np.split(self._items.numpy(), self._offsets[1:-1].numpy())
            if self.cache_negatives:
                self._negatives, cached = cached_negatives(histories, self.num_items, self.num_negatives, self.seed)
            else:
                rng = np.random.default_rng(self.seed)
                self._negatives, cached = sample_negatives(histories, self.num_items, self.num_negatives, rng), False
            rank_zero_info(
                f"{type(self).__name__}: {self.num_negatives} negatives per user for the sampled protocol "
                f"{'read from the cache' if cached else 'drawn'} in {time.perf_counter() - start:.1f} s"
            )
        return self._negatives

    def train_dataloader(self) -> StatefulDataLoader:
        trainer = getattr(self, "trainer", None)
        if not self.group_by_length or (trainer is not None and trainer.world_size > 1):
            return super().train_dataloader()
        lengths = (self.split("train").sequence > 0).sum(1)
        return self.loader("train", sampler=LengthGroupedShuffle(lengths, self.batch_size, pool_batches=LENGTH_POOL))

    def val_dataloader(self):
        self.draw_negatives()  # here, after the task's checks and before any loader worker starts
        return super().val_dataloader()

    def test_dataloader(self):
        self.draw_negatives()
        return super().test_dataloader()

    def predict_dataloader(self):
        self.draw_negatives()
        return super().predict_dataloader()


class LoggedSequences(SequenceData):
    """Base of the modules that read a real log: raw ids are filtered (if asked), then
    numbered ``1 .. I``.

    Args:
        min_user_interactions: users with fewer interactions are dropped (at least 3, the
            default: leave-one-out needs a training, a validation and a test item).
        min_item_interactions: items with fewer interactions are dropped (default 1: none).
            Both thresholds are applied until they hold together (the k-core); SASRec and
            BERT4Rec prepared their files with 5 and 5.
        Others: as in :class:`SequenceData`.
    """

    cache_negatives = True

    def __init__(
        self, min_user_interactions: LeaveOneOut = 3, min_item_interactions: PositiveInt = 1, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.min_user_interactions, self.min_item_interactions = min_user_interactions, min_item_interactions

    def read(self) -> Histories:
        """Histories with the log's raw item ids, in time order."""
        raise TypeError(f"{type(self).__name__} must define read(), returning the raw histories")

    def load(self) -> tuple[Histories, int]:
        raw = self.read()
        self.read_counts = counts(raw)
        self.sources = dict.fromkeys(("train", "val", "test"), self.source)
        kept = filter_min_counts(raw, self.min_user_interactions, self.min_item_interactions)
        if not kept:
            raise DataError(
                f"no user of {self.source} ({self.read_counts['users']} users) is left with the thresholds "
                f"users >= {self.min_user_interactions}, items >= {self.min_item_interactions} interactions: "
                "lower data.min_user_interactions or data.min_item_interactions"
            )
        return index_items(kept)

    def summary(self) -> str:
        read, kept = self.read_counts, super().summary()
        thresholds = (
            f"thresholds: users >= {self.min_user_interactions}, items >= {self.min_item_interactions} "
            "interactions (data.min_user_interactions, data.min_item_interactions)"
        )
        if (read["users"], read["items"], read["interactions"]) == (
            self.num_users,
            self.num_items,
            self.num_interactions,
        ):
            return f"{kept}, all that {self.source} holds ({thresholds}: nothing dropped)"
        return (
            f"{kept} kept of {read['users']} users, {read['items']} items, {read['interactions']} interactions "
            f"in {self.source} ({thresholds})"
        )

    @property
    def source(self) -> str:
        """The file read, for the set-up line."""
        return "the file"


class MovieLens100K(LoggedSequences):
    """MovieLens-100K (943 users, 1682 films, 100,000 ratings), every rating an interaction.

    Reads ``$FRAMEWORK_DATA_DIR/MovieLens100K/raw/u.data`` (or ``data.root``, the folder of
    ``u.data``). A raw log, so its thresholds default to SASRec's and BERT4Rec's 5 and 5:
    943 users and 1349 items remain (99,287 interactions).

    Args:
        root: the folder holding ``u.data`` (the unzipped ``ml-100k``), instead of the default.
        min_user_interactions, min_item_interactions: as in :class:`LoggedSequences` (5, 5).
        Others: as in :class:`LoggedSequences`.
    """

    def __init__(
        self,
        root: Optional[str] = None,
        min_user_interactions: LeaveOneOut = 5,
        min_item_interactions: PositiveInt = 5,
        **kwargs,
    ) -> None:
        super().__init__(
            min_user_interactions=min_user_interactions, min_item_interactions=min_item_interactions, **kwargs
        )
        self.root = root
        self.file: Optional[Path] = None  # u.data, once read

    @property
    def source(self) -> str:
        """The file read (its path, so that the run's provenance hashes it)."""
        return str(self.file or "u.data")

    def read(self) -> Histories:
        folder = dataset_dir(
            "MovieLens100K/raw",
            root=self.root,
            expect=("u.data",),
            source="https://files.grouplens.org/datasets/movielens/ml-100k.zip (unzip ml-100k/)",
        )
        self.file = folder / "u.data"
        return read_movielens(self.file)


class UserItemSequences(LoggedSequences):
    """Any file in the SASRec format: ``user item`` per line, each user's items in time order
    (``data/ml-1m.txt``, ``Beauty.txt``, ``Steam.txt`` of the SASRec repository).

    Such a file is usually prepared already (SASRec's files are 5-cores), so it is taken as it
    is: the thresholds default to 3 interactions per user (leave-one-out's minimum, which
    drops nothing from a prepared file) and 1 per item. Raise them to filter a raw log. The
    set-up line says how many users, items and interactions the file held and how many were
    kept.

    Args:
        path: the file, absolute or relative to ``$FRAMEWORK_DATA_DIR``.
        Others: as in :class:`LoggedSequences` (thresholds 3 and 1).
    """

    def __init__(self, path: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.path = Path(path)
        self.file: Optional[Path] = None  # where the path was found, once read

    @property
    def source(self) -> str:
        """The file read (its whole path once found, so that the run's provenance hashes it)."""
        return str(self.file or self.path)

    def read(self) -> Histories:
        folder = dataset_dir(
            str(self.path.parent),
            root=self.path.parent if self.path.is_absolute() else None,
            expect=(self.path.name,),
            key="data.path",
            source="https://github.com/kang205/SASRec (data/) or any 'user item' per-line file",
        )
        self.file = folder / self.path.name
        return read_user_item_lines(self.file)


class GeneratedSequences(SequenceData):
    """Generated histories with a known structure (see :mod:`.generated`): item successors,
    user tastes and popularity. The embedded default: no data folder needed.

    Args:
        num_users, num_items: how many histories, over item ids ``1 .. num_items``.
        min_length, max_length: items per history, at least 3 (leave-one-out); uniform
            between the two unless ``median_length`` is given.
        median_length: draw the lengths from a log-normal with this median and
            ``length_spread`` (clipped to ``min_length .. max_length``): the long tail of
            real logs, where most users have a few items and a few have hundreds.
        length_spread: the standard deviation of the log-length (0.9: mean about 1.5 x median).
        num_tastes: item groups; each user prefers one.
        branching: successors per item in the transition table.
        follow: probability that the next item is a successor of the current one.
        taste: probability that it is a popular item of the user's group.
        zipf: exponent of the item popularity (0: every item equally popular).
        Others: as in :class:`SequenceData`; ``seed`` also seeds the generator.
    """

    def __init__(
        self,
        num_users: PositiveInt = 2000,
        num_items: PositiveInt = 400,
        min_length: LeaveOneOut = 10,
        max_length: LeaveOneOut = 40,
        num_tastes: PositiveInt = 10,
        branching: PositiveInt = 3,
        follow: Probability = 0.5,
        taste: Probability = 0.4,
        zipf: NonNegativeFloat = 1.0,
        median_length: Optional[PositiveFloat] = None,
        length_spread: NonNegativeFloat = 0.9,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.structure = dict(
            num_users=num_users,
            num_items=num_items,
            min_length=min_length,
            max_length=max_length,
            num_tastes=num_tastes,
            branching=branching,
            follow=follow,
            taste=taste,
            zipf=zipf,
            median_length=median_length,
            length_spread=length_spread,
        )
        taste_histories(**{**self.structure, "num_users": 0})  # check the arguments now, not at set-up
        self.num_items = num_items

    def load(self) -> tuple[Histories, int]:
        return taste_histories(**self.structure, seed=self.seed), self.structure["num_items"]
