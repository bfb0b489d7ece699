"""User histories from interaction logs: readers, minimum-count filtering, item ids.

A *history* is one user's item ids in time order (a 1-D int64 array). The readers return
one history per user with the log's raw item ids; :func:`filter_min_counts` and
:func:`index_items` turn them into histories over items ``1 .. I`` (0 is padding); the data
modules (:mod:`.modules`) split each history leave-one-out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from framework.data import MOVIELENS_RATINGS, Field, Format

Histories = list[np.ndarray]

#: The SASRec data format: ``user item`` per line, ids from 1, each user's lines in time order. A
#: user may meet an item again (repeat consumption), so no key is declared.
USER_ITEM = Format("a 'user item' file", (Field("user id", 1), Field("item id", 1)), shape="'user item'")


def group_by_user(users: np.ndarray, items: np.ndarray) -> Histories:
    """Histories in ascending user id, each in the order the rows are given (a stable grouping)."""
    order = np.argsort(users, kind="stable")
    users, items = users[order], items[order]
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
    return np.split(items, starts[1:])


def read_movielens(path: Path) -> Histories:
    """MovieLens ``u.data`` (:data:`~framework.data.MOVIELENS_RATINGS`): tab-separated ``user item
    rating timestamp`` lines of integers, ids from 1, ratings 1 to 5, one line per user and film
    (another line, or a second rating of a film by a user, is an error naming the file and line).

    Every rating counts as an interaction (implicit feedback, as in SASRec and BERT4Rec).
    A user's items are ordered by timestamp; equal timestamps keep the file's order.
    """
    rows = MOVIELENS_RATINGS.read(path)
    by_time = np.argsort(rows["timestamp"], kind="stable")
    return group_by_user(rows["user id"][by_time], rows["item id"][by_time])


def read_user_item_lines(path: Path) -> Histories:
    """The SASRec data format (:data:`USER_ITEM`): ``user item`` per line (ids from 1), each user's
    lines already in time order."""
    rows = USER_ITEM.read(path)
    return group_by_user(rows["user id"], rows["item id"])


def filter_min_counts(histories: Histories, min_user: int, min_item: int) -> Histories:
    """Drop items with fewer than ``min_item`` interactions and users with fewer than
    ``min_user``, repeatedly until both hold (the k-core of the user-item graph; dropping
    items can push a user below the threshold and the other way round). Users keep their
    order, and items their order within a history.

    All interactions are filtered at once (counts by ``bincount``), a pass per round of
    removals: a few hundredths of a second for 300,000 interactions.
    """
    if not histories:
        return []
    lengths = np.fromiter(map(len, histories), np.int64, len(histories))
    users = np.repeat(np.arange(len(histories)), lengths)
    _, item = np.unique(np.concatenate(histories), return_inverse=True)
    keep = np.ones(len(users), dtype=bool)
    while True:
        item_counts = np.bincount(item[keep], minlength=int(item.max()) + 1 if len(item) else 0)
        user_counts = np.bincount(users[keep], minlength=len(histories))
        drop = keep & ((item_counts[item] < min_item) | (user_counts[users] < min_user))
        if not drop.any():
            break
        keep &= ~drop
    offsets = np.r_[0, np.cumsum(lengths)]
    return [histories[u][keep[offsets[u] : offsets[u + 1]]] for u in np.flatnonzero(user_counts >= min_user)]


def index_items(histories: Histories) -> tuple[Histories, int]:
    """Raw item ids -> ``1 .. I`` in ascending raw id (0 stays free for padding); returns I too."""
    if not histories:
        return [], 0
    lengths = np.fromiter(map(len, histories), np.int64, len(histories))
    ids, index = np.unique(np.concatenate(histories), return_inverse=True)
    return np.split(index.astype(np.int64) + 1, np.cumsum(lengths)[:-1]), len(ids)
