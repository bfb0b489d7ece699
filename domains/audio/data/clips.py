"""Clips of one fixed length: the batch format and the data-module base of the audio domain.

Every audio data set yields examples ``{"waveform": (T,), "lengths": (), "target": ()}``
with T = round(sample_rate * duration): a longer recording is cropped around its centre,
a shorter one is padded with zeros at the end, and ``lengths`` counts its real samples, so
models that pool over time (Transformer, CRNN) mask the padding. Batches are the default
collation of these dicts: waveform (B, T), lengths (B,), target (B,).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import torch
from torch import Tensor
from torch.utils.data import Dataset

from framework.data import DataError, SplitDataModule, check_audio, read_audio
from framework.values import NonNegativeInt, PositiveFloat, PositiveInt


def fit_length(waveform: Tensor, num_samples: int) -> tuple[Tensor, int]:
    """(L,) -> ((num_samples,), real samples): the centre ``num_samples`` of a longer clip,
    or the clip followed by zeros."""
    length = waveform.shape[0]
    if length >= num_samples:
        start = (length - num_samples) // 2
        return waveform[start : start + num_samples], num_samples
    return torch.nn.functional.pad(waveform, (0, num_samples - length)), length


def read_wav(path: Path, sample_rate: int, channels: Optional[int] = None) -> Tensor:
    """A mono float32 waveform in [-1, 1] read with soundfile (channels averaged); the file's
    rate must be ``sample_rate`` (no resampling) and, unless None, its channels ``channels``.
    A file that breaks a rule or cannot be read is a ``DataError`` naming it."""
    samples, rate = read_audio(path)
    if rate != sample_rate:
        raise DataError(
            f"{path} is sampled at {rate} Hz but data.sample_rate={sample_rate}: resample the file, or set "
            f"data.sample_rate (and model.frontend.sample_rate) to {rate} if all files are"
        )
    if channels is not None and samples.shape[1] != channels:
        raise DataError(f"{path} has {samples.shape[1]} channels; the data set's files have {channels}")
    return torch.from_numpy(samples).mean(1)


def example(waveform: Tensor, num_samples: int, label: int) -> dict[str, Tensor]:
    """The example dict of one clip, fitted to ``num_samples``."""
    fitted, length = fit_length(waveform, num_samples)
    return {"waveform": fitted, "lengths": torch.tensor(length), "target": torch.tensor(label)}


class ClipFiles(Dataset):
    """WAV files read on access (nothing is held in memory), each fitted to ``num_samples``.
    Every file's header is checked when the dataset is made (:func:`framework.data.check_audio`),
    so that a file that is empty, no audio or of another rate stops a run before training.

    Args:
        paths: the files.
        labels: the class index of each file.
        sample_rate: Hz every file must have.
        num_samples: T.
        channels: the channels every file must have (None: any, averaged).
    """

    def __init__(
        self,
        paths: Sequence[Path],
        labels: Sequence[int],
        sample_rate: int,
        num_samples: int,
        channels: Optional[int] = None,
    ) -> None:
        if len(paths) != len(labels):
            raise ValueError(f"ClipFiles: {len(paths)} paths but {len(labels)} labels")
        check_audio(paths, sample_rate, channels)
        self.paths, self.labels = list(paths), list(labels)
        self.sample_rate, self.num_samples, self.channels = sample_rate, num_samples, channels

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        return example(read_wav(self.paths[i], self.sample_rate, self.channels), self.num_samples, self.labels[i])


class AudioDataModule(SplitDataModule):
    """Base of the audio data modules: clips of ``duration`` seconds at ``sample_rate`` Hz.

    Args:
        sample_rate: Hz of the clips (the model's ``frontend.sample_rate`` must match; the task checks it).
        duration: seconds every clip is cropped or padded to (T = round(sample_rate * duration)).
        batch_size, eval_batch_size, num_workers: as in SplitDataModule.
    """

    def __init__(
        self,
        sample_rate: PositiveInt,
        duration: PositiveFloat,
        batch_size: PositiveInt = 64,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        self.sample_rate, self.duration = sample_rate, duration
        self.num_samples = round(sample_rate * duration)
