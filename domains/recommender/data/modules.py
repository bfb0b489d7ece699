"""Sequential-recommendation data modules: leave-one-out splits of user histories.

Every module yields the same batches (see :mod:`.datasets`): training rows
``{"sequence"}`` and ranking queries ``{"history", "target", "seen", "negatives", "user"}``
for validation (the second-to-last item) and test (the last item).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
from lightning.pytorch.utilities import rank_zero_info
from torch.utils.data import Dataset

from framework.data import SplitDataModule, dataset_dir

from .datasets import RankingQueries, TrainSequences, sample_negatives
from .generated import taste_histories
from .interactions import Histories, filter_min_counts, index_items, leave_one_out, read_movielens, read_user_item_lines


class SequenceData(SplitDataModule):
    """Base of the recommender data modules; a subclass returns histories from :meth:`load`.

    Args:
        max_len: items a model sees (the most recent ones); training rows hold ``max_len + 1``.
        num_negatives: items per user for the sampled protocol (uniform over the items the
            user never interacted with, drawn once from ``seed``; 100 in the SASRec paper).
        seed: the seed of the negatives (and of generated data).
        batch_size, eval_batch_size, num_workers, predict_split: as in
            :class:`~framework.data.SplitDataModule`.
    """

    def __init__(self, max_len: int = 50, num_negatives: int = 100, seed: int = 0, batch_size: int = 128,
                 eval_batch_size: Optional[int] = None, num_workers: int = 0, predict_split: str = "test") -> None:
        super().__init__(batch_size, eval_batch_size, num_workers, predict_split)
        if max_len < 1:
            raise ValueError(f"data.max_len must be at least 1, got {max_len}")
        if num_negatives < 1:
            raise ValueError(f"data.num_negatives must be at least 1, got {num_negatives}")
        self.max_len, self.num_negatives, self.seed = max_len, num_negatives, seed
        self.num_items: Optional[int] = None

    def load(self) -> tuple[Histories, int]:
        """Histories over item ids ``1 .. I`` in time order, and I."""
        raise TypeError(f"{type(self).__name__} must define load(), returning (histories, num_items)")

    def make_splits(self) -> dict[str, Dataset]:
        histories, self.num_items = self.load()
        split = leave_one_out(histories)
        rng = np.random.default_rng(self.seed)
        val_seen = [np.append(h, t) for h, t in zip(split.val_history, split.val_target)]
        test_seen = [np.append(h, t) for h, t in zip(split.test_history, split.test_target)]
        splits = {
            "train": TrainSequences(split.train, self.max_len),
            "val": RankingQueries(split.val_history, split.val_target, self.max_len,
                                  sample_negatives(val_seen, self.num_items, self.num_negatives, rng)),
            "test": RankingQueries(split.test_history, split.test_target, self.max_len,
                                   sample_negatives(test_seen, self.num_items, self.num_negatives, rng)),
        }
        rank_zero_info(f"{type(self).__name__}: {len(histories)} users, {self.num_items} items, "
                       f"{sum(map(len, histories))} interactions; leave-one-out split; {self.num_negatives} "
                       f"uniform negatives per user for the sampled protocol (seed {self.seed})")
        return splits


class LoggedSequences(SequenceData):
    """Base of the modules that read a real log: raw ids are filtered, then numbered ``1 .. I``.

    Args:
        min_user_interactions: users with fewer interactions are dropped (at least 3:
            leave-one-out needs a training, a validation and a test item).
        min_item_interactions: items with fewer interactions are dropped; both thresholds
            are applied until they hold together (5 and 5 in SASRec and BERT4Rec).
        Others: as in :class:`SequenceData`.
    """

    def __init__(self, min_user_interactions: int = 5, min_item_interactions: int = 5, **kwargs) -> None:
        super().__init__(**kwargs)
        if min_user_interactions < 3:
            raise ValueError("data.min_user_interactions must be at least 3 (leave-one-out needs a training, "
                             f"a validation and a test item), got {min_user_interactions}")
        if min_item_interactions < 1:
            raise ValueError(f"data.min_item_interactions must be at least 1, got {min_item_interactions}")
        self.min_user_interactions, self.min_item_interactions = min_user_interactions, min_item_interactions

    def read(self) -> Histories:
        """Histories with the log's raw item ids, in time order."""
        raise TypeError(f"{type(self).__name__} must define read(), returning the raw histories")

    def load(self) -> tuple[Histories, int]:
        return index_items(filter_min_counts(self.read(), self.min_user_interactions, self.min_item_interactions))


class MovieLens100K(LoggedSequences):
    """MovieLens-100K (943 users, 1682 films, 100,000 ratings), every rating an interaction.

    Reads ``$FRAMEWORK_DATA_DIR/MovieLens100K/raw/u.data`` (or ``data.root``, the folder of
    ``u.data``). With the default thresholds (5 and 5) 943 users and 1349 items remain.

    Args:
        root: the folder holding ``u.data`` (the unzipped ``ml-100k``), instead of the default.
        Others: as in :class:`LoggedSequences`.
    """

    def __init__(self, root: Optional[str] = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.root = root

    def read(self) -> Histories:
        folder = dataset_dir("MovieLens100K/raw", root=self.root, expect=("u.data",),
                             source="https://files.grouplens.org/datasets/movielens/ml-100k.zip (unzip ml-100k/)")
        return read_movielens(folder / "u.data")


class UserItemSequences(LoggedSequences):
    """Any file in the SASRec format: ``user item`` per line, each user's items in time order
    (``data/ml-1m.txt``, ``Beauty.txt``, ``Steam.txt`` of the SASRec repository).

    Args:
        path: the file, absolute or relative to ``$FRAMEWORK_DATA_DIR``.
        Others: as in :class:`LoggedSequences`.
    """

    def __init__(self, path: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.path = Path(path)

    def read(self) -> Histories:
        folder = dataset_dir(str(self.path.parent), root=self.path.parent if self.path.is_absolute() else None,
                             expect=(self.path.name,), key="data.path",
                             source="https://github.com/kang205/SASRec (data/) or any 'user item' per-line file")
        return read_user_item_lines(folder / self.path.name)


class GeneratedSequences(SequenceData):
    """Generated histories with a known structure (see :mod:`.generated`): item successors,
    user tastes and popularity. The embedded default: no data folder needed.

    Args:
        num_users, num_items: how many histories, over item ids ``1 .. num_items``.
        min_length, max_length: items per history (uniform), at least 3 (leave-one-out).
        num_tastes: item groups; each user prefers one.
        branching: successors per item in the transition table.
        follow: probability that the next item is a successor of the current one.
        taste: probability that it is a popular item of the user's group.
        zipf: exponent of the item popularity.
        Others: as in :class:`SequenceData`; ``seed`` also seeds the generator.
    """

    def __init__(self, num_users: int = 2000, num_items: int = 400, min_length: int = 10, max_length: int = 40,
                 num_tastes: int = 10, branching: int = 3, follow: float = 0.5, taste: float = 0.4, zipf: float = 1.0,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.structure = dict(num_users=num_users, num_items=num_items, min_length=min_length, max_length=max_length,
                              num_tastes=num_tastes, branching=branching, follow=follow, taste=taste, zipf=zipf)
        taste_histories(**{**self.structure, "num_users": 0})  # check the arguments now, not at set-up

    def load(self) -> tuple[Histories, int]:
        return taste_histories(**self.structure, seed=self.seed), self.structure["num_items"]
