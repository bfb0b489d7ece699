"""The negatives of the sampled protocol: the vectorised draw against a loop over the same
draws and against the exact distribution, and the cache keyed by the data."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest
import torch

from domains.recommender.data import GeneratedSequences, cached_negatives, negatives_key, sample_negatives
from domains.recommender.data import negatives as drawing
from domains.recommender.data.negatives import block_width


def loop_negatives(seen, num_items, count, rng):
    """The same rejection sampling written as a loop over users and draws: each round draws the
    same block of ids, and a user keeps, in order, the ids not seen and not kept already."""
    kept = [[] for _ in seen]
    sets = [set(map(int, s)) for s in seen]
    allowed = np.array([num_items - len(s) for s in sets])
    pending = list(range(len(seen)))
    while pending:
        width = block_width(num_items, allowed[pending], np.array([len(kept[u]) for u in pending]), count)
        draws = rng.integers(1, num_items + 1, size=(len(pending), width))
        for user, row in zip(pending, draws):
            for item in map(int, row):
                if len(kept[user]) < count and item not in sets[user] and item not in kept[user]:
                    kept[user].append(item)
        pending = [u for u in pending if len(kept[u]) < count]
    return kept


def test_the_vectorised_draw_keeps_what_a_loop_over_the_same_draws_keeps():
    rng = np.random.default_rng(5)
    # small catalogues and long histories: repeats, seen draws and users that need several rounds
    seen = [rng.choice(40, n, replace=False) + 1 for n in rng.integers(0, 30, 200)] + [np.arange(1, 33)]
    got = sample_negatives(seen, 40, 8, np.random.default_rng(11))
    assert got.tolist() == loop_negatives(seen, 40, 8, np.random.default_rng(11))
    assert torch.equal(got, sample_negatives(seen, 40, 8, np.random.default_rng(11)))  # the seed repeats it
    assert not torch.equal(got, sample_negatives(seen, 40, 8, np.random.default_rng(12)))
    for row, items in zip(got.numpy(), seen):
        assert len(set(row)) == 8 and not np.isin(row, items).any() and row.min() >= 1 and row.max() <= 40


def test_negatives_are_uniform_over_the_unseen_items():
    # 6 items, items 1 and 2 seen: each of the C(4, 2) = 6 pairs of {3, 4, 5, 6} has probability 1/6
    users = 6000
    drawn = sample_negatives([np.array([2, 1])] * users, 6, 2, np.random.default_rng(0)).numpy()
    pairs = Counter(tuple(sorted(row)) for row in drawn.tolist())
    assert sorted(pairs) == list(combinations([3, 4, 5, 6], 2))
    for share in pairs.values():
        assert share / users == pytest.approx(1 / 6, abs=0.02)  # 4 standard deviations
    # and as the slow reference draws them (a set difference with the catalogue, then a choice)
    rng = np.random.default_rng(1)
    reference = Counter(
        tuple(sorted(rng.choice(np.setdiff1d(np.arange(1, 7), [1, 2]), 2, replace=False))) for _ in range(users)
    )
    for pair in pairs:
        assert pairs[pair] / users == pytest.approx(reference[pair] / users, abs=0.028)  # 4 sd of the difference
    # item frequencies at a larger catalogue: every unseen item equally often (count / allowed)
    seen = [np.arange(1, 51)] * 4000
    counts = np.bincount(sample_negatives(seen, 100, 10, np.random.default_rng(2)).numpy().ravel(), minlength=101)
    assert counts[:51].sum() == 0
    assert np.abs(counts[51:] / 4000 - 10 / 50).max() < 0.035  # 5.5 standard deviations


def test_too_few_unseen_items_are_refused():
    seen = [np.array([1, 2, 3]), np.arange(1, 16)]
    with pytest.raises(ValueError, match="data.num_negatives=6 but a user has only 5 unseen items"):
        sample_negatives(seen, 20, 6, np.random.default_rng(0))
    assert sample_negatives(seen, 20, 5, np.random.default_rng(0))[1].sort().values.tolist() == [16, 17, 18, 19, 20]


def test_the_cache_is_reused_for_the_same_data_and_rebuilt_for_changed_data(tmp_path, monkeypatch):
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return sample_negatives(*args, **kwargs)

    monkeypatch.setattr(drawing, "sample_negatives", counted)
    histories = [np.array([1, 2, 3]), np.array([4, 5, 6, 7])]
    first, cached = cached_negatives(histories, 30, 5, seed=0, cache=tmp_path)
    assert not cached and len(calls) == 1 and len(list(tmp_path.iterdir())) == 1
    again, cached = cached_negatives([h.copy() for h in histories], 30, 5, seed=0, cache=tmp_path)
    assert cached and len(calls) == 1 and torch.equal(first, again)
    changed = [np.array([1, 2, 3]), np.array([4, 5, 6, 8])]  # one item changed: another key, a new draw
    assert negatives_key(changed, 30, 5, 0) != negatives_key(histories, 30, 5, 0)
    _, cached = cached_negatives(changed, 30, 5, seed=0, cache=tmp_path)
    assert not cached and len(calls) == 2 and len(list(tmp_path.iterdir())) == 2
    for other in ((histories, 31, 5, 0), (histories, 30, 6, 0), (histories, 30, 5, 1)):  # items, count, seed
        assert negatives_key(*other) != negatives_key(histories, 30, 5, 0)
    # a damaged entry is drawn again, with a warning
    (entry,) = [f for f in tmp_path.iterdir() if f.name == negatives_key(histories, 30, 5, 0)]
    (entry / "negatives.pt").write_bytes(b"cut")
    with pytest.warns(UserWarning, match="could not be read"):
        redrawn, cached = cached_negatives(histories, 30, 5, seed=0, cache=tmp_path)
    assert not cached and torch.equal(redrawn, first)


def test_a_data_module_draws_its_negatives_once_on_first_use_and_shares_them():
    data = GeneratedSequences(num_users=100, num_items=60, min_length=5, max_length=15, num_negatives=20)
    data.setup("fit")
    val, test = data.split("val"), data.split("test")
    assert not data.negatives_drawn  # set up, not drawn
    batch = next(iter(data.test_dataloader()))
    assert data.negatives_drawn and val.negatives is test.negatives is data.negatives
    assert torch.equal(batch["negatives"], data.negatives[: len(batch["negatives"])])
    every = [s[s > 0] for s in test.seen]
    for row, items, target in zip(data.negatives, every, test.target):
        assert not torch.isin(row, torch.cat([items, target.view(1)])).any()  # never the user's items
