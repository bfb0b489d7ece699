"""Generated user histories with a known structure (the embedded default data).

Items have a Zipf popularity, p(i) ~ 1 / rank(i)^zipf, and belong to one of
``num_tastes`` groups. Each item has ``branching`` successors drawn at random once (a
sparse, seeded transition table, with weights ~ 1/1, 1/2, ..., 1/branching), and each
user has one taste group. A history starts in the user's group; every next item is::

    with probability follow:                a successor of the current item
    with probability taste:                 a popular item of the user's group
    otherwise:                              a popular item of any group

No item repeats within a history (draws of seen items are skipped), as in MovieLens,
where a user rates a film once. Popularity alone predicts little. The current item alone
(a model without attention) predicts the successor part; the taste part needs the whole
history (which group the user keeps returning to), which attention over the history and
target attention (DIN) can read.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from framework.errors import ConfigError

from .interactions import Histories


class TasteChain:
    """The seeded item groups and transition table; :meth:`walk` draws one history."""

    def __init__(
        self,
        num_items: int,
        num_tastes: int,
        branching: int,
        follow: float,
        taste: float,
        zipf: float,
        rng: np.random.Generator,
    ) -> None:
        ranks = rng.permutation(num_items)  # item i + 1 has popularity rank ranks[i]
        popularity = 1.0 / (ranks + 1.0) ** zipf
        self.group = rng.permutation(num_items) % num_tastes  # group of item i + 1, groups of equal size
        self.members = [np.flatnonzero(self.group == g) + 1 for g in range(num_tastes)] + [np.arange(1, num_items + 1)]
        self.cdfs = [np.cumsum(popularity[m - 1] / popularity[m - 1].sum()) for m in self.members]
        choices = [rng.choice(num_items - 1, branching, replace=False) for _ in range(num_items)]
        # successors exclude the item itself: shift draws at or above it by one
        self.successors = (np.stack([c + (c >= i) for i, c in enumerate(choices)]) + 1).tolist()  # ids 1..I
        weights = 1.0 / np.arange(1, branching + 1)
        self.weights = (weights / weights.sum()).tolist()
        self.num_items, self.num_tastes, self.follow, self.taste, self.rng = num_items, num_tastes, follow, taste, rng

    def popular(self, group: int, seen: set[int]) -> int:
        """A popularity draw among the unseen items of ``group`` (``num_tastes``: every item)."""
        members, cdf = self.members[group], self.cdfs[group]
        if all(int(m) in seen for m in members):
            members, cdf = self.members[-1], self.cdfs[-1]
        while True:
            item = int(members[min(int(np.searchsorted(cdf, self.rng.random(), side="right")), len(members) - 1)])
            if item not in seen:
                return item

    def successor(self, current: int, seen: set[int]) -> int | None:
        """A weighted draw among the unseen successors of ``current``; None if all were seen."""
        fresh = [(s, w) for s, w in zip(self.successors[current - 1], self.weights) if s not in seen]
        if not fresh:
            return None
        draw = self.rng.random() * sum(w for _, w in fresh)
        for item, weight in fresh:
            draw -= weight
            if draw < 0:
                return item
        return fresh[-1][0]

    def walk(self, length: int) -> np.ndarray:
        taste = int(self.rng.integers(self.num_tastes))
        seen: set[int] = set()
        item = self.popular(taste, seen)
        history = [item]
        seen.add(item)
        while len(history) < length:
            draw = self.rng.random()
            following = self.successor(item, seen) if draw < self.follow else None
            if following is not None:
                item = following
            else:
                item = self.popular(taste if draw < self.follow + self.taste else self.num_tastes, seen)
            history.append(item)
            seen.add(item)
        return np.array(history, dtype=np.int64)


def taste_histories(
    num_users: int,
    num_items: int,
    min_length: int,
    max_length: int,
    num_tastes: int = 10,
    branching: int = 3,
    follow: float = 0.5,
    taste: float = 0.4,
    zipf: float = 1.0,
    median_length: Optional[float] = None,
    length_spread: float = 0.9,
    seed: int = 0,
) -> Histories:
    """``num_users`` histories of ``min_length .. max_length`` items over ids ``1 .. num_items``:
    uniform lengths, or log-normal ones with ``median_length`` and ``length_spread`` (the
    standard deviation of the log-length), clipped to that range."""
    if not 1 <= branching < num_items:
        raise ConfigError(f"data.branching must be in [1, num_items), got {branching} with num_items={num_items}")
    if not 3 <= min_length <= max_length <= num_items:
        raise ConfigError(
            f"data: need 3 <= min_length <= max_length <= num_items, got {min_length}, {max_length}, {num_items}"
        )
    if not 1 <= num_tastes <= num_items:
        raise ConfigError(f"data.num_tastes must be in [1, num_items], got {num_tastes}")
    if not (0.0 <= follow and 0.0 <= taste and follow + taste <= 1.0):
        raise ConfigError(
            f"data.follow and data.taste must be probabilities with follow + taste <= 1, got {follow}, {taste}"
        )
    if median_length is not None and not (median_length > 0 and length_spread >= 0):
        raise ConfigError(
            f"data.median_length must be positive and data.length_spread at least 0, got "
            f"{median_length}, {length_spread}"
        )
    rng = np.random.default_rng(seed)
    chain = TasteChain(num_items, num_tastes, branching, follow, taste, zipf, rng)
    if median_length is None:
        lengths = rng.integers(min_length, max_length + 1, num_users)
    else:
        drawn = np.rint(rng.lognormal(np.log(median_length), length_spread, num_users))
        lengths = np.clip(drawn, min_length, max_length).astype(np.int64)
    return [chain.walk(int(n)) for n in lengths]
