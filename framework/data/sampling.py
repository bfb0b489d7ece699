"""Training orders that are a function of the run's seed and the epoch, never of when they are drawn.

PyTorch's ``RandomSampler`` draws each epoch's order from torch's global generator at the
moment the loader's iterator starts. A run resumed from a checkpoint starts that iterator at
another moment of the global stream (after the model's set-up, before the random states are
restored), so it would train on another order than the uninterrupted run. Here the order of
epoch ``e`` is drawn from a generator seeded with ``(seed, e)``: a resumed run, a run killed at
any point, and every rank of a DDP run see the same order, like ``DistributedSampler``.
Lightning tells the sampler its epoch (``set_epoch``) before each epoch; an epoch's iterator
keeps its epoch and how many examples it gave in its state, which torchdata's
``StatefulDataLoader`` saves in a checkpoint and restores, so a run resumed inside an epoch
continues that epoch's order where it stopped (whenever the loader restores it: before or
after ``set_epoch``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

import torch
from torch import Tensor
from torch.utils.data import Sampler

#: Mixed with the epoch so that consecutive epochs' seeds are far apart.
EPOCH_STRIDE = 1_000_003


class EpochShuffle(Sampler[int]):
    """A random order of ``n`` examples, drawn anew each epoch from ``(seed, epoch)``.

    Args:
        n: the number of examples.
        seed: the run's seed (default ``torch.initial_seed()``: ``seed_everything``'s seed, or
            the random one torch started with).
    """

    def __init__(self, n: int, seed: Optional[int] = None) -> None:
        self.n = n
        self.seed = torch.initial_seed() if seed is None else seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def generator(self, epoch: int) -> torch.Generator:
        """The generator of ``epoch`` (on the CPU, whatever device a run makes the default)."""
        return torch.Generator("cpu").manual_seed((self.seed + EPOCH_STRIDE * epoch) % 2**63)

    def order(self, epoch: int) -> list[int]:
        """The examples' order in ``epoch``."""
        return torch.randperm(self.n, generator=self.generator(epoch), device="cpu").tolist()

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[int]:
        return EpochOrder(self)


class LengthGroupedShuffle(EpochShuffle):
    """A random order in which each run of ``batch_size`` examples has about the same length,
    so that batches carry little padding.

    Each epoch the examples are shuffled, cut into pools of ``pool_batches`` batches, sorted by
    length within a pool and cut into batches, and the full batches are shuffled; the one short
    batch (when ``batch_size`` does not divide ``n``) comes last, so that a loader cutting the
    order into runs of ``batch_size`` meets exactly these batches. Which examples share a
    batch is still random within a length.

    Args:
        lengths: (N,) the length of each example (items, sentences, tokens).
        batch_size: the loader's batch size.
        pool_batches: batches per sorted pool.
        seed: as for :class:`EpochShuffle`.
    """

    def __init__(self, lengths: Tensor, batch_size: int, pool_batches: int, seed: Optional[int] = None) -> None:
        super().__init__(len(lengths), seed)
        if batch_size < 1 or pool_batches < 1:
            raise ValueError(f"batch_size and pool_batches must be at least 1, got {batch_size} and {pool_batches}")
        self.lengths, self.batch_size, self.pool = lengths.cpu(), batch_size, batch_size * pool_batches

    def order(self, epoch: int) -> list[int]:
        if not self.n:
            return []
        generator = self.generator(epoch)
        order = torch.randperm(self.n, generator=generator, device="cpu")
        pools = [pool[self.lengths[pool].argsort(stable=True)] for pool in order.split(self.pool)]
        batches = list(torch.cat(pools).split(self.batch_size))
        short = [batches.pop()] if len(batches[-1]) < self.batch_size else []
        shuffled = torch.randperm(len(batches), generator=generator, device="cpu").tolist()
        return torch.cat([batches[i] for i in shuffled] + short).tolist()


class EpochOrder(Iterator[int]):
    """One epoch of a sampler's order; its state (the epoch, the examples given) resumes it.

    The epoch is read from the sampler when the first example is taken, not when the iterator
    is made: Lightning may make a loader's iterator before it tells the sampler a resumed run's
    epoch.
    """

    def __init__(self, sampler: EpochShuffle) -> None:
        self.sampler, self.given = sampler, 0
        self.epoch: Optional[int] = None
        self._order: Optional[list[int]] = None

    def __next__(self) -> int:
        if self._order is None:
            self.epoch = self.sampler.epoch if self.epoch is None else self.epoch
            self._order = self.sampler.order(self.epoch)
        if self.given == len(self._order):
            raise StopIteration
        self.given += 1
        return self._order[self.given - 1]

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.sampler.epoch if self.epoch is None else self.epoch, "given": self.given}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.given, self._order = int(state["epoch"]), int(state["given"]), None


def loader_generator(seed: Optional[int] = None) -> torch.Generator:
    """A generator of a loader's own (``DataLoader(generator=...)``), from which each of its
    iterators draws its workers' base seed; without one that draw comes from torch's global
    stream, at a moment that differs between a resumed run and an uninterrupted one, and every
    later dropout mask would differ. ``seed`` as for :class:`EpochShuffle`."""
    return torch.Generator("cpu").manual_seed(torch.initial_seed() if seed is None else seed)
