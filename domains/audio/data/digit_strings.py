"""Connected digit strings: 2 to 7 single-digit recordings joined with short gaps, transcribed.

A string is spoken by one voice: its digits are recordings of one FSDD speaker (or, for the
embedded variant, generated audio events standing for the ten digits), each followed by a
gap of silence, with a faint noise floor over the whole string::

    [0.1 s] "three" [gap] "five" [gap] "one" [0.1 s]   ->   three five one   (tokens 6 8 4 </s>)

The recordings of a split are never used by another (FSDD's official split keeps the
recordings with index 0-4 for test; the speaker-disjoint split keeps whole speakers), so the
test strings are new utterances, and under ``split: speakers`` new voices. Every string is
drawn from the seed when the splits are made: the same seed gives the same strings.

Tokens: ``<pad>`` = 0, ``<s>`` = 1, ``</s>`` = 2, digit d = 3 + d (:data:`VOCAB_SIZE` = 13).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple, Optional

import torch
from torch import Tensor
from torch.utils.data import Dataset

from framework.data import SplitDataModule, split_seed, split_sizes
from framework.decoding import Specials
from framework.errors import ConfigError
from framework.values import NonNegativeFloat, NonNegativeInt, OpenFraction, PositiveInt, Seed

from .clips import read_wav
from .events import synthesize
from .fsdd import CHANNELS, FSDD, SplitProtocol

PAD, BOS, EOS, FIRST_DIGIT = 0, 1, 2, 3
SPECIALS = Specials(pad=PAD, bos=BOS, eos=EOS)
VOCAB_SIZE = FIRST_DIGIT + 10
WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
#: Where the strings' digits come from (``data.source``).
Source = Literal["fsdd", "events"]
EDGE_S = 0.1  # silence before the first digit and after the last, seconds


def transcript(tokens: Sequence[int]) -> str:
    """Token ids -> the words of their digits, up to the first ``</s>`` (``3 5 4 2`` -> ``zero two one``).
    Special tokens in between are skipped."""
    words = []
    for token in tokens:
        if token == EOS:
            break
        if FIRST_DIGIT <= token < VOCAB_SIZE:
            words.append(WORDS[token - FIRST_DIGIT])
    return " ".join(words)


class Clip(NamedTuple):
    """A single-digit clip of a split's pool."""

    waveform: Tensor
    digit: int
    voice: str


class DigitStringExamples(Dataset):
    """Strings drawn from a pool of single-digit clips, assembled when read.

    Args:
        clips: the pool (every clip of one split).
        size: strings.
        min_digits, max_digits: the range of string lengths (both included).
        gap: (low, high) seconds of silence between digits, uniform.
        noise: standard deviation of the noise floor (the clips peak around 0.1 - 1).
        sample_rate: Hz.
        seed: draws the strings (voice, digits, clips, gaps) and their noise.

    Examples: ``{"waveform": (T,), "lengths": (), "target": (L + 1,)}``, the digit tokens then ``</s>``.
    """

    def __init__(
        self,
        clips: Sequence[Clip],
        size: int,
        min_digits: int,
        max_digits: int,
        gap: tuple[float, float],
        noise: float,
        sample_rate: int,
        seed: int,
    ) -> None:
        self.clips, self.noise, self.sample_rate, self.seed = list(clips), noise, sample_rate, seed
        by_voice: dict[str, list[list[int]]] = {}
        for index, clip in enumerate(self.clips):
            by_voice.setdefault(clip.voice, [[] for _ in range(10)])[clip.digit].append(index)
        voices = sorted(v for v, digits in by_voice.items() if all(digits))  # voices with every digit
        if size and not voices:
            raise ValueError("digit strings: no voice of this split has a recording of every digit")
        generator = torch.Generator().manual_seed(seed)
        self.strings: list[tuple[list[int], list[int]]] = []  # (clip indices, gap samples after each)
        for _ in range(size):
            pool = by_voice[voices[int(torch.randint(len(voices), (1,), generator=generator))]]
            count = int(torch.randint(min_digits, max_digits + 1, (1,), generator=generator))
            digits = torch.randint(10, (count,), generator=generator).tolist()
            chosen = [pool[d][int(torch.randint(len(pool[d]), (1,), generator=generator))] for d in digits]
            gaps = (gap[0] + (gap[1] - gap[0]) * torch.rand(count, generator=generator)) * sample_rate
            self.strings.append((chosen, gaps.round().long().tolist()))

    def __len__(self) -> int:
        return len(self.strings)

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        chosen, gaps = self.strings[i]
        edge = torch.zeros(round(EDGE_S * self.sample_rate))
        parts = [edge]
        for index, gap in zip(chosen, gaps):
            parts += [self.clips[index].waveform, torch.zeros(gap)]
        parts[-1] = edge  # the last gap is the trailing silence
        waveform = torch.cat(parts)
        noise = torch.randn(waveform.shape, generator=torch.Generator().manual_seed(self.seed * 1_000_003 + i))
        target = torch.tensor([FIRST_DIGIT + self.clips[index].digit for index in chosen] + [EOS])
        return {"waveform": waveform + self.noise * noise, "lengths": torch.tensor(len(waveform)), "target": target}


def collate_strings(examples: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    """Waveforms padded with zeros to the longest, targets with ``<pad>``: waveform (B, T),
    lengths (B,), target (B, L)."""
    waveforms = torch.nn.utils.rnn.pad_sequence([e["waveform"] for e in examples], batch_first=True)
    targets = torch.nn.utils.rnn.pad_sequence([e["target"] for e in examples], batch_first=True, padding_value=PAD)
    return {"waveform": waveforms, "lengths": torch.stack([e["lengths"] for e in examples]), "target": targets}


class DigitStrings(SplitDataModule):
    """Connected digit strings from FSDD recordings (``source: fsdd``) or from generated audio
    events (``source: events``, the embedded variant: no data folder).

    Batches: ``{"waveform": (B, T), "lengths": (B,), "target": (B, L)}`` (digit tokens, ``</s>``,
    ``<pad>``). ``vocab_size`` (13) and ``sample_rate`` are checked against the model's when a
    run starts.

    Args:
        source: ``fsdd`` or ``events``.
        root, split, test_speakers, val_fraction: FSDD's (:class:`~domains.audio.data.fsdd.FSDD`):
            which recordings each split's strings are made of.
        train_size, val_size, test_size: strings per split.
        min_digits, max_digits: string lengths.
        gap: [low, high] seconds of silence between digits.
        noise: the noise floor's standard deviation.
        events_per_digit: clips per digit and split of the ``events`` source.
        seed: the strings of split k come from ``seed + k`` (:func:`framework.data.split_seed`); the
            ``events`` source's clips of split k from ``10000 + seed + k``; FSDD's validation hold-out
            from ``seed``.
        sample_rate: Hz (FSDD: 8000).
        batch_size, eval_batch_size, num_workers: as in SplitDataModule.
    """

    vocab_size = VOCAB_SIZE

    def __init__(
        self,
        source: Source = "fsdd",
        root: Optional[str] = None,
        split: SplitProtocol = "official",
        test_speakers: Optional[list[str]] = None,
        val_fraction: OpenFraction = 0.1,
        train_size: NonNegativeInt = 4000,
        val_size: NonNegativeInt = 400,
        test_size: NonNegativeInt = 500,
        min_digits: PositiveInt = 2,
        max_digits: PositiveInt = 7,
        gap: tuple[NonNegativeFloat, NonNegativeFloat] = (0.05, 0.25),
        noise: NonNegativeFloat = 1e-3,
        events_per_digit: PositiveInt = 20,
        seed: Seed = 0,
        sample_rate: PositiveInt = 8000,
        batch_size: PositiveInt = 32,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        self.sizes = split_sizes(train_size, val_size, test_size)
        if not 1 <= min_digits <= max_digits:
            raise ConfigError(
                f"data.min_digits and data.max_digits must satisfy 1 <= min_digits <= max_digits, got "
                f"{min_digits} and {max_digits}"
            )
        if len(gap) != 2 or not 0 <= gap[0] <= gap[1]:
            raise ConfigError(f"data.gap must be [low, high] seconds with 0 <= low <= high, got {list(gap)}")
        self.fsdd = FSDD(root, split, test_speakers, val_fraction, seed, sample_rate) if source == "fsdd" else None
        self.source, self.sample_rate, self.seed = source, sample_rate, seed
        self.min_digits, self.max_digits, self.gap, self.noise = (
            min_digits,
            max_digits,
            (float(gap[0]), float(gap[1])),
            noise,
        )
        self.events_per_digit = events_per_digit
        self.collate_fn = collate_strings

    def pools(self) -> dict[str, list[Clip]]:
        """The single-digit clips of each split."""
        if self.fsdd is not None:
            return {
                name: [Clip(read_wav(r.path, self.sample_rate, CHANNELS), r.digit, r.speaker) for r in part]
                for name, part in self.fsdd.recordings().items()
            }
        pools = {}
        for name in self.sizes:  # generated events of 0.4 s, -5 to 20 dB SNR
            generator = torch.Generator().manual_seed(split_seed(10_000 + self.seed, name))
            labels = torch.arange(10).repeat(self.events_per_digit)
            clips = synthesize(labels, round(0.4 * self.sample_rate), self.sample_rate, generator, (-5.0, 20.0))
            pools[name] = [Clip(clip, int(label), "events") for clip, label in zip(clips, labels)]
        return pools

    def make_splits(self) -> dict[str, DigitStringExamples]:
        return {
            name: DigitStringExamples(
                pool,
                self.sizes[name],
                self.min_digits,
                self.max_digits,
                self.gap,
                self.noise,
                self.sample_rate,
                split_seed(self.seed, name),
            )
            for name, pool in self.pools().items()
        }
