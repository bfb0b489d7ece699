"""Generated audio events: the embedded default of the audio domain (no data folder, no download).

Each clip holds one event in white background noise. The ten classes differ in the pitch
pattern of a tone (or are a noise burst); what varies within a class is the pitch, the
pitch span, the duration, the onset, the loudness and the signal-to-noise ratio, so a
model must recognise a shape in the spectrogram, not a position or a frequency.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor

from framework.data import TensorExamples, seeded_splits, split_sizes
from framework.errors import ConfigError
from framework.values import AnyReal, NonNegativeInt, PositiveInt, Seed, declare

from .clips import AudioDataModule

#: The classes, by label: pitch patterns of a tone (:data:`CONTOURS`; beeps: a steady tone
#: switched on and off) and a white-noise burst.
CLASSES = ("rise", "fall", "steady", "arch", "valley", "step_up", "step_down", "vibrato", "beeps", "noise")
RAMP_S = 0.01  # attack and release of every event (linear ramps), seconds
CHUNK = 256  # clips synthesised at once (bounds the (CHUNK, T) buffers)
#: ``data.duration`` of the generated clips: long enough to hold an event.
EventDuration = declare("EventDuration", float, "a number >= 0.3 (seconds, to hold an event)", low=0.3)

#: log2(f / f0) of the tone classes over the event time u (B, T) in [0, 1], for a span s (B, 1)
#: in octaves, a vibrato rate r (B, 1) in Hz and the time t (T,) in seconds; centred on f0
#: (rise: -s/2 -> +s/2). The other classes (steady, beeps, noise) keep f0.
CONTOURS = {
    "rise": lambda u, s, r, t: s * (u - 0.5),
    "fall": lambda u, s, r, t: s * (0.5 - u),
    "arch": lambda u, s, r, t: s * (0.5 - (2 * u - 1).abs()),
    "valley": lambda u, s, r, t: s * ((2 * u - 1).abs() - 0.5),
    "step_up": lambda u, s, r, t: s * ((u >= 0.5).to(u.dtype) - 0.5),
    "step_down": lambda u, s, r, t: s * (0.5 - (u >= 0.5).to(u.dtype)),
    "vibrato": lambda u, s, r, t: 0.25 * torch.sin(2 * math.pi * r * t),
}


def pitch_contour(label: Tensor, u: Tensor, t: Tensor, span: Tensor, rate: Tensor) -> Tensor:
    """(B, T) log2(f / f0) of each clip's class (:data:`CONTOURS`)."""
    contour = torch.zeros_like(u)
    for name, shape in CONTOURS.items():
        rows = label == CLASSES.index(name)
        contour[rows] = shape(u[rows], span[rows, None], rate[rows, None], t)
    return contour


def synthesize(
    label: Tensor, num_samples: int, sample_rate: int, generator: torch.Generator, snr_db: tuple[float, float]
) -> Tensor:
    """(B,) labels -> (B, T) waveforms, every random choice drawn from ``generator``.

    Per clip: onset and duration (0.25 - 0.7 s, inside the clip), f0 log-uniform in
    300 - 1500 Hz, span 0.5 - 1.5 octaves, vibrato rate 5 - 9 Hz, 3 - 5 beeps, amplitude
    0.3 - 1, SNR uniform in ``snr_db`` (event power over the noise power); the sum is scaled
    by 0.3 (peaks mostly within +-1, like recorded audio).
    """
    b = label.shape[0]
    rand = lambda low, high: low + (high - low) * torch.rand(b, generator=generator)
    clip_s = num_samples / sample_rate
    duration = rand(0.25, 0.7).clamp(max=clip_s)
    onset = rand(0, 1) * (clip_s - duration)
    f0 = torch.exp(rand(math.log(300), math.log(1500)))
    span, rate, amplitude, snr = rand(0.5, 1.5), rand(5, 9), rand(0.3, 1.0), rand(*snr_db)
    beeps = torch.randint(3, 6, (b,), generator=generator)

    t = torch.arange(num_samples) / sample_rate
    u = ((t - onset.unsqueeze(1)) / duration.unsqueeze(1)).clamp(0, 1)
    time_left = torch.minimum(t - onset.unsqueeze(1), onset.unsqueeze(1) + duration.unsqueeze(1) - t)
    envelope = (time_left / RAMP_S).clamp(0, 1)
    gate = (torch.floor(u * 2 * beeps.unsqueeze(1)) % 2 == 0) | (label != CLASSES.index("beeps")).unsqueeze(1)
    envelope = envelope * gate

    frequency = f0.unsqueeze(1) * torch.exp2(pitch_contour(label, u, t, span, rate))
    cycles = torch.cumsum(frequency, 1, dtype=torch.float64) / sample_rate  # float64: thousands of cycles
    tone = torch.sin(2 * math.pi * (cycles - cycles.floor()).float())
    burst = torch.randn(b, num_samples, generator=generator)
    is_noise = (label == CLASSES.index("noise")).unsqueeze(1)
    event = amplitude.unsqueeze(1) * envelope * torch.where(is_noise, burst, tone * math.sqrt(2))  # unit power
    noise_std = amplitude * 10 ** (-snr / 20)
    noise = torch.randn(b, num_samples, generator=generator) * noise_std.unsqueeze(1)
    return 0.3 * (event + noise)


class AudioEventDataset(TensorExamples):
    """``size`` generated clips of ``num_samples`` samples at ``sample_rate``, from ``seed``.

    Examples follow the audio batch format: ``{"waveform": (T,), "lengths": (), "target": ()}``
    (every clip is T samples long, so ``lengths`` is T).
    """

    fields = ("waveform", "lengths", "target")

    def __init__(self, size: int, sample_rate: int, num_samples: int, snr_db: tuple[float, float], seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.target = torch.randint(len(CLASSES), (size,), generator=generator)
        self.waveform = (
            torch.cat(
                [
                    synthesize(self.target[i : i + CHUNK], num_samples, sample_rate, generator, snr_db)
                    for i in range(0, size, CHUNK)
                ]
            )
            if size
            else torch.zeros(0, num_samples)
        )
        self.lengths = torch.full((size,), num_samples)


class AudioEvents(AudioDataModule):
    """Generated audio events (:data:`CLASSES`, 10 classes): train, val and test from one seed
    (:func:`framework.data.seeded_splits`).

    Args:
        train_size, val_size, test_size: clips per split.
        sample_rate, duration: clip format (default 8 kHz, 1 s, as FSDD's configs).
        snr_db: range of the signal-to-noise ratio in dB, ``[low, high]``.
        seed: the seed of the train split (val and test draw from seed + 1 and seed + 2).
        batch_size, eval_batch_size, num_workers: as in SplitDataModule.
    """

    num_classes = len(CLASSES)

    def __init__(
        self,
        train_size: NonNegativeInt = 3000,
        val_size: NonNegativeInt = 500,
        test_size: NonNegativeInt = 500,
        sample_rate: PositiveInt = 8000,
        duration: EventDuration = 1.0,
        snr_db: tuple[AnyReal, AnyReal] = (-10.0, 10.0),
        seed: Seed = 0,
        batch_size: PositiveInt = 64,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(sample_rate, duration, batch_size, eval_batch_size, num_workers)
        self.sizes = split_sizes(train_size, val_size, test_size)
        if len(snr_db) != 2 or snr_db[0] > snr_db[1]:
            raise ConfigError(f"data.snr_db must be [low, high] with low <= high, got {list(snr_db)}")
        self.snr_db, self.seed = (float(snr_db[0]), float(snr_db[1])), seed

    def make_splits(self) -> dict[str, AudioEventDataset]:
        make = lambda size, seed: AudioEventDataset(size, self.sample_rate, self.num_samples, self.snr_db, seed)
        return seeded_splits(self.sizes, self.seed, make)
