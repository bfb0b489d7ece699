"""The negatives of the sampled protocol: items a user never interacted with, drawn for all
users at once, and kept in a cache keyed by the data they were drawn for.

Every user gets ``count`` distinct items, uniform over the items outside the user's history
(training, validation and test items alike), drawn once from a seed. The draw is rejection
sampling over the whole batch of users: each round draws a block of uniform ids 1 .. I per
unfinished user and keeps, in draw order, the ids that the user has not seen and that are
not kept already. Keeping the first occurrences of i.i.d. uniform draws over the allowed items
is sampling without replacement, so every set of ``count`` unseen items is equally likely.
A round is a few array operations over (users x block) ids: about half a second for 31,000
users and 100 negatives, where a set difference with the catalogue per user took minutes.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from framework.data import cache_dir, load_or_rebuild
from framework.errors import ConfigError
from framework.runs import atomic_file

from .interactions import Histories

#: Bumped when the draw changes, so that a cache never serves negatives of an older draw.
DRAW_VERSION = 1


def expected_draws(allowed: np.ndarray, kept: np.ndarray, count: int) -> np.ndarray:
    """Uniform draws a user with ``allowed`` unseen items and ``kept`` negatives so far needs on
    average to reach ``count`` distinct ones: sum_{j=kept}^{count-1} allowed / (allowed - j),
    approximated by allowed * ln((allowed - kept + 1/2) / (allowed - count + 1/2)); then
    inflated by I / allowed for the draws of seen items (the caller's)."""
    allowed, kept = allowed.astype(np.float64), kept.astype(np.float64)
    return allowed * np.log((allowed - kept + 0.5) / (allowed - count + 0.5))


def block_width(num_items: int, allowed: np.ndarray, kept: np.ndarray, count: int) -> int:
    """Draws per user in one round: enough for about 9 users in 10 to finish in it (the rest go
    on in the next round, alone)."""
    needed = expected_draws(allowed, kept, count) * num_items / allowed
    return int(math.ceil(1.1 * float(np.quantile(needed, 0.9)))) + 4


def sample_negatives(seen: Histories, num_items: int, count: int, rng: np.random.Generator) -> Tensor:
    """``count`` distinct items per user, uniform over ``1 .. num_items`` minus the user's
    ``seen`` items, drawn from ``rng`` (see the module's docstring): (U, count) int64, each
    row in draw order."""
    users = len(seen)
    if users == 0:
        return torch.zeros(0, count, dtype=torch.long)
    lengths = np.fromiter(map(len, seen), np.int64, users)
    items = np.concatenate(seen).astype(np.int64)
    if len(items) and (items.min() < 1 or items.max() > num_items):
        raise ValueError(f"seen items must lie in 1 .. {num_items}, got {items.min()} .. {items.max()}")
    span = num_items + 1
    pairs = np.unique(np.repeat(np.arange(users, dtype=np.int64), lengths) * span + items)  # (user, item), sorted
    allowed = num_items - np.bincount(pairs // span, minlength=users)
    if allowed.min() < count:
        raise ConfigError(
            f"data.num_negatives={count} but a user has only {allowed.min()} unseen items "
            f"of {num_items}; lower data.num_negatives"
        )
    out = np.zeros((users, count), dtype=np.int64)
    kept = np.zeros(users, dtype=np.int64)
    pending = np.arange(users)
    while len(pending):
        width = block_width(num_items, allowed[pending], kept[pending], count)
        draws = rng.integers(1, span, size=(len(pending), width))
        keys = pending[:, None] * span + draws
        where = np.minimum(np.searchsorted(pairs, keys), len(pairs) - 1)
        unseen = pairs[where] != keys if len(pairs) else np.ones_like(keys, dtype=bool)
        # a draw equal to a kept negative or to an earlier draw of the round is a repeat
        # (the kept columns come first; unused ones hold 0, which is never drawn)
        before = count if kept[pending].any() else 0
        row = np.concatenate([out[pending], draws], 1) if before else draws
        order = np.argsort(row, axis=1, kind="stable")
        ordered = np.take_along_axis(row, order, 1)
        repeat = np.zeros_like(row, dtype=bool)
        np.put_along_axis(repeat, order, np.c_[np.zeros(len(row), bool), ordered[:, 1:] == ordered[:, :-1]], 1)
        fresh = unseen & ~repeat[:, before:]
        rank = np.cumsum(fresh, 1)  # 1, 2, ... over the fresh draws of a row, in draw order
        need = count - kept[pending]
        r, c = np.nonzero(fresh & (rank <= need[:, None]))
        out[pending[r], kept[pending][r] + rank[r, c] - 1] = draws[r, c]
        kept[pending] += np.minimum(rank[:, -1], need)
        pending = pending[kept[pending] < count]
    return torch.from_numpy(out)


def negatives_key(histories: Histories, num_items: int, count: int, seed: int) -> str:
    """A 16-hex-digit key of what the negatives depend on: every history (ids and order), the
    item count, the count per user, the seed and the draw's version. Hashing 300,000
    interactions takes a few milliseconds."""
    digest = hashlib.sha256(f"negatives v{DRAW_VERSION} items={num_items} count={count} seed={seed}\n".encode())
    lengths = np.fromiter(map(len, histories), np.int64, len(histories))
    digest.update(lengths.tobytes())
    if len(histories):
        digest.update(np.ascontiguousarray(np.concatenate(histories), dtype=np.int64).tobytes())
    return digest.hexdigest()[:16]


def cached_negatives(
    histories: Histories, num_items: int, count: int, seed: int, cache: Optional[Path] = None
) -> tuple[Tensor, bool]:
    """The negatives of :func:`sample_negatives` (``rng`` seeded with ``seed``) for the users'
    whole ``histories``, read from ``cache / <key> / negatives.pt`` when an earlier run drew
    them for the same data, else drawn and written there. ``cache=None``: the framework's
    cache folder ``recommender_negatives`` (``$FRAMEWORK_CACHE_DIR``). Returns the negatives
    and whether they came from the cache."""
    folder = (cache or cache_dir("recommender_negatives")) / negatives_key(histories, num_items, count, seed)
    path = folder / "negatives.pt"
    read = []

    def load() -> Tensor:
        if path.is_file():
            negatives = torch.load(path, weights_only=True)
            if negatives.shape != (len(histories), count):
                raise RuntimeError(f"{path} holds negatives of shape {tuple(negatives.shape)}")
            read.append(True)
            return negatives
        negatives = sample_negatives(histories, num_items, count, np.random.default_rng(seed))
        with atomic_file(path) as file:  # a reader never sees half a file
            torch.save(negatives, file)
        return negatives

    return load_or_rebuild(folder, load), bool(read)
