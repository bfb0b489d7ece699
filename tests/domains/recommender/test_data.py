"""Readers on the real MovieLens-100K, the SASRec file format, filtering, the leave-one-out split,
negatives and the generated histories."""

from __future__ import annotations

import csv
from collections import Counter, defaultdict

import numpy as np
import pytest
import torch

from domains.recommender.data import (
    GeneratedSequences,
    MovieLens100K,
    SequenceData,
    TasteChain,
    UserItemSequences,
    filter_min_counts,
    left_pad,
    read_movielens,
    taste_histories,
)
from framework.data import DataNotFoundError
from framework.data.sampling import LengthGroupedShuffle


def naive_k_core(histories, min_user, min_item):
    """Filtering written out with dictionaries, one pass at a time until nothing changes."""
    users = {u: list(h) for u, h in enumerate(histories)}
    while True:
        counts = Counter(i for h in users.values() for i in h)
        kept = {u: [i for i in h if counts[i] >= min_item] for u, h in users.items()}
        kept = {u: h for u, h in kept.items() if len(h) >= min_user}
        if kept == users:
            return list(users.values())
        users = kept


def test_movielens_reader_orders_every_user_by_time(shared_data):
    path = shared_data("MovieLens100K") / "raw" / "u.data"
    rows = defaultdict(list)
    with open(path) as f:
        for index, (user, item, _, stamp) in enumerate(csv.reader(f, delimiter="\t")):
            rows[int(user)].append((int(stamp), index, int(item)))
    expected = [[item for _, _, item in sorted(rows[u])] for u in sorted(rows)]
    histories = read_movielens(path)
    assert len(histories) == 943 and sum(map(len, histories)) == 100_000
    assert [h.tolist() for h in histories] == expected


def test_movielens_module_filters_and_splits_leave_one_out(shared_data):
    data = MovieLens100K(root=str(shared_data("MovieLens100K") / "raw"), max_len=20, num_negatives=50)
    data.setup("fit")
    assert data.num_items == 1349  # items with >= 5 ratings; every user has >= 20
    raw = [h.tolist() for h in read_movielens(shared_data("MovieLens100K") / "raw" / "u.data")]
    kept = sum(map(len, naive_k_core(raw, 5, 5)))
    assert kept == sum(int((r > 0).sum()) for r in data.split("val").seen) + 2 * 943

    test, val, train = data.split("test"), data.split("val"), data.split("train")
    assert len(test) == len(val) == len(train) == 943
    user = 0
    seen = test.seen[user][test.seen[user] > 0]
    assert seen[-1] == val.target[user] and torch.equal(val.seen[user][val.seen[user] > 0], seen[:-1])
    assert torch.equal(test.history[user], seen[-20:]) and torch.equal(train[user]["sequence"], seen[:-1][-21:])
    negatives = test.negatives[user]
    assert len(negatives.unique()) == 50
    assert not torch.isin(negatives, torch.cat([seen, test.target[user : user + 1]])).any()


def test_user_item_file_reads_like_movielens(shared_data, tmp_path):
    histories = read_movielens(shared_data("MovieLens100K") / "raw" / "u.data")
    path = tmp_path / "ml-100k.txt"
    path.write_text("".join(f"{u} {i}\n" for u, h in enumerate(histories, 1) for i in h))
    from_file = UserItemSequences(path=str(path), max_len=10, min_user_interactions=5, min_item_interactions=5)
    from_file.setup("fit")
    movielens = MovieLens100K(max_len=10)
    movielens.setup("fit")
    assert from_file.num_items == movielens.num_items == 1349
    for split in ("val", "test"):
        assert torch.equal(from_file.split(split).seen, movielens.split(split).seen)
        assert torch.equal(from_file.split(split).negatives, movielens.split(split).negatives)
    # taken as it is, the raw log keeps every item (the file's 1682 films)
    as_is = UserItemSequences(path=str(path), max_len=10)
    as_is.setup("fit")
    assert (as_is.num_users, as_is.num_items, as_is.num_interactions) == (943, 1682, 100_000)


def test_a_prepared_file_is_taken_as_it_is_and_the_set_up_says_what_was_kept(tmp_path, caplog):
    # a prepared file: users with 3 or more items, items seen once (a 5-core filter would drop them all)
    lines = [(1, 10), (1, 20), (1, 30), (2, 40), (2, 10), (2, 50), (2, 60), (3, 70), (3, 80), (3, 90)]
    path = tmp_path / "prepared.txt"
    path.write_text("".join(f"{u} {i}\n" for u, i in lines))
    data = UserItemSequences(path=str(path), max_len=4)
    with caplog.at_level("INFO"):
        data.setup("fit")
    assert (data.num_users, data.num_items, data.num_interactions) == (3, 9, 10)
    assert data.read_counts == {"users": 3, "items": 9, "interactions": 10}
    assert data.train_items.tolist() == [1, 4, 1, 7]  # items 10, 40, 10, 70: all but each user's last two
    assert "3 users, 9 items, 10 interactions, all that" in caplog.text and "nothing dropped" in caplog.text
    assert "users >= 3, items >= 1" in caplog.text
    # a user with fewer than 3 items cannot be split leave-one-out: dropped, and the line says so
    path.write_text("".join(f"{u} {i}\n" for u, i in lines + [(4, 10), (4, 20)]))
    caplog.clear()
    short = UserItemSequences(path=str(path), max_len=4)
    with caplog.at_level("INFO"):
        short.setup("fit")
    assert (short.num_users, short.num_items, short.num_interactions) == (3, 9, 10)
    assert short.read_counts == {"users": 4, "items": 9, "interactions": 12}
    assert "3 users, 9 items, 10 interactions kept of 4 users, 9 items, 12 interactions" in caplog.text


def test_filtering_matches_the_naive_loop():
    rng = np.random.default_rng(0)
    histories = [rng.integers(1, 40, rng.integers(1, 12)) for _ in range(60)]
    got = filter_min_counts(histories, 4, 3)
    assert [h.tolist() for h in got] == naive_k_core([h.tolist() for h in histories], 4, 3)
    assert got and len(got) < len(histories)


class GivenHistories(SequenceData):
    """A data module of the histories it is given, over items 1 .. 8."""

    def __init__(self, histories, **kwargs):
        super().__init__(**kwargs)
        self.histories = histories

    def load(self):
        return [np.array(h) for h in self.histories], 8


def test_leave_one_out_and_left_padding():
    data = GivenHistories([[5, 6, 7, 8], [1, 2, 3]], max_len=2)
    data.setup("fit")
    train, val, test = data.split("train"), data.split("val"), data.split("test")
    assert train.sequence.tolist() == [[0, 5, 6], [0, 0, 1]]  # the training items, max_len + 1 of them
    assert val.target.tolist() == [7, 2] and val.history.tolist() == [[5, 6], [0, 1]]
    assert test.target.tolist() == [8, 3] and test.history.tolist() == [[6, 7], [1, 2]]
    assert test.seen.tolist() == [[5, 6, 7], [1, 2, 0]]
    assert left_pad([np.array([5, 6, 7]), np.array([1, 2])], 2).tolist() == [[6, 7], [1, 2]]
    with pytest.raises(ValueError, match="at least 3 items per user"):
        GivenHistories([[1, 2, 3], [1, 2]]).setup("fit")


def test_generated_histories_follow_successors_and_tastes():
    histories = taste_histories(300, 200, 20, 30, num_tastes=5, branching=3, follow=0.5, taste=0.4, seed=1)
    assert all(len(set(h.tolist())) == len(h) for h in histories)  # no repeats within a history
    assert [h.tolist() for h in histories] == [h.tolist() for h in taste_histories(300, 200, 20, 30, 5, seed=1)]
    chain = TasteChain(200, 5, 3, 0.5, 0.4, 1.0, np.random.default_rng(1))  # the same tables: the same first draws
    assert not any(a in chain.successors[a - 1] for a in range(1, 201))
    pairs = [(a, b) for h in histories for a, b in zip(h[:-1], h[1:])]
    followed = np.mean([b in chain.successors[a - 1] for a, b in pairs])
    assert 0.4 < followed < 0.55  # follow = 0.5 (less when every successor was seen, more by chance)
    # a user's own group holds about follow / 5 + taste + (1 - follow - taste) / 5 = 0.52 of the items,
    # against about 0.3 for the largest group of a user without a taste
    share = np.mean([np.bincount(chain.group[h - 1], minlength=5).max() / len(h) for h in histories])
    assert 0.45 < share < 0.65


def test_bad_data_settings_name_the_key(tmp_path):
    """Settings that relate two values, and data that is not there (a value outside its domain is
    refused while parsing: tests/domains/recommender/test_cli.py)."""
    with pytest.raises(ValueError, match="data: need 3 <= min_length <= max_length <= num_items"):
        GeneratedSequences(min_length=30, max_length=20)
    with pytest.raises(ValueError, match="data.follow and data.taste must be probabilities with follow \\+ taste <= 1"):
        GeneratedSequences(follow=0.7, taste=0.5)
    with pytest.raises(ValueError, match="data.num_tastes"):
        GeneratedSequences(num_tastes=0)
    with pytest.raises(DataNotFoundError, match="given by data.root"):
        MovieLens100K(root=str(tmp_path / "nowhere")).setup("fit")
    with pytest.raises(DataNotFoundError, match="data.path"):
        UserItemSequences(path=str(tmp_path / "missing.txt")).setup("fit")
    (tmp_path / "bad.txt").write_text("1 2 3\n4 5\n")
    with pytest.raises(ValueError, match="bad.txt:1: expected 'user item' \\(2 fields\\), got 3"):
        UserItemSequences(path=str(tmp_path / "bad.txt")).setup("fit")


def test_the_training_loader_groups_by_length_unless_told_not_to():
    data = GeneratedSequences(
        num_users=400, num_items=200, min_length=3, max_length=60, median_length=6, max_len=50, batch_size=32
    )
    data.setup("fit")
    lengths = (data.split("train").sequence > 0).sum(1)
    assert int(lengths.median()) <= 5 and int(lengths.max()) > 30  # median 6 items, 2 held out: a long tail
    assert isinstance(data.train_dataloader().sampler, LengthGroupedShuffle)
    widths = [int((b["sequence"] > 0).sum(1).max()) for b in data.train_dataloader()]
    assert np.median(widths) < 20  # most batches need few columns
    plain = GeneratedSequences(num_users=400, num_items=200, group_by_length=False, batch_size=32)
    plain.setup("fit")
    assert not isinstance(plain.train_dataloader().sampler, LengthGroupedShuffle)
