"""Training orders depend on the seed and the epoch only, so a resumed run sees the same batches."""

from __future__ import annotations

import torch
from torchdata.stateful_dataloader import StatefulDataLoader

from framework.data.sampling import EpochShuffle, LengthGroupedShuffle


def test_an_epochs_order_is_a_permutation_fixed_by_seed_and_epoch_whatever_was_drawn_before():
    sampler = EpochShuffle(50, seed=7)
    first = list(sampler)
    assert sorted(first) == list(range(50))
    torch.rand(1000)  # the global stream moves on: the order does not
    assert list(sampler) == first == list(EpochShuffle(50, seed=7))
    sampler.set_epoch(1)
    assert list(sampler) != first and sorted(sampler) == list(range(50))
    assert list(EpochShuffle(50, seed=8)) != first


def test_the_default_seed_is_the_runs_seed():
    torch.manual_seed(123)
    assert EpochShuffle(5).seed == 123


def test_a_loader_resumed_inside_an_epoch_gives_the_rest_of_its_batches():
    data = list(range(40))
    loader = StatefulDataLoader(data, batch_size=4, sampler=EpochShuffle(40, seed=3))
    loader.sampler.set_epoch(2)
    iterator = iter(loader)
    taken = [next(iterator).tolist() for _ in range(3)]
    state = loader.state_dict()
    rest = [batch.tolist() for batch in iterator]
    for epoch_told_before_iterating in (True, False):  # the loader's state carries the epoch either way
        resumed = StatefulDataLoader(data, batch_size=4, sampler=EpochShuffle(40, seed=3))
        resumed.load_state_dict(state)
        if epoch_told_before_iterating:
            resumed.sampler.set_epoch(2)
        assert [batch.tolist() for batch in resumed] == rest and len(taken) + len(rest) == 10


def test_length_grouped_batches_cover_every_example_once_with_little_padding_and_the_short_batch_last():
    lengths = torch.randint(1, 52, (1000,), generator=torch.Generator().manual_seed(0))
    sampler = LengthGroupedShuffle(lengths, batch_size=16, pool_batches=5, seed=0)
    order = list(sampler)
    assert sorted(order) == list(range(1000))
    batches = [order[i : i + 16] for i in range(0, 1000, 16)]  # how a loader with batch_size=16 cuts it
    spread = sum(int(lengths[b].max() - lengths[b].min()) for b in batches) / len(batches)
    assert spread < 12  # lengths 1 .. 51, pools of 5 batches sorted: about 51 / 5 (random batches: about 45)
    random_spread = sum(int(lengths[b].max() - lengths[b].min()) for b in torch.randperm(1000).split(16)) / 63
    assert random_spread > 35
    # 1000 = 62 * 16 + 8: the short batch comes last, so every batch the loader cuts is one of the sorted ones
    assert len(batches[-1]) == 8
    sampler.set_epoch(1)
    assert list(sampler) != order and list(LengthGroupedShuffle(lengths, 16, 5, seed=0)) == order


def test_nothing_to_order():
    assert list(LengthGroupedShuffle(torch.zeros(0, dtype=torch.long), 4, 2, seed=0)) == []


def test_an_iterator_made_before_the_epoch_is_told_follows_the_epoch():
    sampler = EpochShuffle(30, seed=5)
    early = iter(sampler)  # Lightning makes a resumed run's iterator first, then calls set_epoch
    sampler.set_epoch(3)
    assert list(early) == sampler.order(3) != sampler.order(0)
