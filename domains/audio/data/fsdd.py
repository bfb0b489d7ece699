"""The Free Spoken Digit Dataset (FSDD): spoken digits 0-9, 8 kHz WAVs, read with soundfile.

Layout: ``$FRAMEWORK_DATA_DIR/fsdd/recordings/{digit}_{speaker}_{index}.wav``
(github.com/Jakobovski/free-spoken-digit-dataset). Two test protocols (``data.split``):

* ``official``: recordings with index 0-4 are the test set, 5-49 train (the repository's README);
* ``speakers``: every recording of ``data.test_speakers`` is the test set, the other
  speakers train (speaker-disjoint: the test voices are never heard in training).

Neither protocol has a validation set: a seeded ``val_fraction`` of the training
recordings is held out as ``val``; the validation accuracy selects the best checkpoint,
and the test split is measured on that checkpoint. Under ``speakers`` the validation
recordings come from the training speakers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, NamedTuple, Optional

import torch

from framework.data import DataError, dataset_dir
from framework.errors import ConfigError
from framework.values import NonNegativeInt, OpenFraction, PositiveFloat, PositiveInt, Seed

from .clips import AudioDataModule, ClipFiles

SOURCE = "https://github.com/Jakobovski/free-spoken-digit-dataset (the recordings/ folder)"
FILE_NAME = re.compile(r"(?P<digit>\d)_(?P<speaker>[^_]+)_(?P<index>\d+)\.wav")
#: FSDD's test protocols (``data.split``).
SplitProtocol = Literal["official", "speakers"]
OFFICIAL_TEST_INDICES = range(5)
CHANNELS = 1  # every recording is mono


class Recording(NamedTuple):
    """One FSDD file and what its name says."""

    path: Path
    digit: int
    speaker: str
    index: int


def list_recordings(folder: Path) -> list[Recording]:
    """Every ``*.wav`` of an FSDD ``recordings`` folder, parsed from its name, in name order."""
    recordings = []
    for path in sorted(folder.glob("*.wav")):
        match = FILE_NAME.fullmatch(path.name)
        if match is None:
            raise DataError(
                f"{path} is not named {{digit}}_{{speaker}}_{{index}}.wav (digit 0-9, index a number): "
                "its name is its label"
            )
        recordings.append(Recording(path, int(match["digit"]), match["speaker"], int(match["index"])))
    return recordings


class FSDD(AudioDataModule):
    """FSDD with the official or a speaker-disjoint split, and a seeded validation hold-out.

    Args:
        root: the ``recordings`` folder (default ``$FRAMEWORK_DATA_DIR/fsdd/recordings``).
        split: ``"official"`` (index 0-4 test) or ``"speakers"`` (``test_speakers`` test).
        test_speakers: the held-out speakers of ``split: speakers`` (e.g. ``[george]``).
        val_fraction: fraction of the training recordings held out for validation.
        seed: seed of the validation hold-out.
        sample_rate, duration: 8000 Hz; clips are cropped (centre) or zero padded to
            ``duration`` seconds with their length kept (1 s keeps 99.4 % of the clips whole).
        batch_size, eval_batch_size, num_workers: as in SplitDataModule.
    """

    num_classes = 10

    def __init__(
        self,
        root: Optional[str] = None,
        split: SplitProtocol = "official",
        test_speakers: Optional[list[str]] = None,
        val_fraction: OpenFraction = 0.1,
        seed: Seed = 0,
        sample_rate: PositiveInt = 8000,
        duration: PositiveFloat = 1.0,
        batch_size: PositiveInt = 64,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(sample_rate, duration, batch_size, eval_batch_size, num_workers)
        test_speakers = list(test_speakers or [])
        if split == "speakers" and not test_speakers:
            raise ConfigError("data.test_speakers must name at least one speaker when data.split is 'speakers'")
        if split == "official" and test_speakers:
            raise ConfigError(
                f"data.test_speakers={test_speakers} is only used with data.split: speakers "
                "(the official split tests on indices 0-4 of every speaker)"
            )
        self.root, self.split_name, self.test_speakers = root, split, test_speakers
        self.val_fraction, self.seed = val_fraction, seed

    def make_splits(self) -> dict[str, ClipFiles]:
        return {
            name: ClipFiles(
                [r.path for r in part], [r.digit for r in part], self.sample_rate, self.num_samples, CHANNELS
            )
            for name, part in self.recordings().items()
        }

    def recordings(self) -> dict[str, list[Recording]]:
        """The recordings of each split (``train``, ``val``, ``test``) under the configured protocol."""
        folder = dataset_dir("fsdd/recordings", root=self.root, source=SOURCE)
        recordings = list_recordings(folder)
        if not recordings:
            raise DataError(f"FSDD: no {{digit}}_{{speaker}}_{{index}}.wav files in {folder} (data.root)")
        self.sources = dict.fromkeys(("train", "val", "test"), str(folder))
        test, train = self.partition(recordings)
        order = torch.randperm(len(train), generator=torch.Generator().manual_seed(self.seed)).tolist()
        num_val = round(self.val_fraction * len(train))
        held_out = set(order[:num_val])
        return {
            "train": [r for i, r in enumerate(train) if i not in held_out],
            "val": [r for i, r in enumerate(train) if i in held_out],
            "test": test,
        }

    def partition(self, recordings: list[Recording]) -> tuple[list[Recording], list[Recording]]:
        """(test, train) recordings of the configured split."""
        if self.split_name == "official":
            is_test = lambda r: r.index in OFFICIAL_TEST_INDICES
        else:
            speakers = sorted({r.speaker for r in recordings})
            unknown = [s for s in self.test_speakers if s not in speakers]
            if unknown:
                raise ConfigError(f"data.test_speakers: no recordings of {unknown}; the speakers are {speakers}")
            if set(self.test_speakers) == set(speakers):
                raise ConfigError(f"data.test_speakers holds out every speaker ({speakers}); none is left to train on")
            is_test = lambda r: r.speaker in self.test_speakers
        return [r for r in recordings if is_test(r)], [r for r in recordings if not is_test(r)]
