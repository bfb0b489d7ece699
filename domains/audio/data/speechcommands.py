"""Google Speech Commands, from a local copy in torchaudio's SPEECHCOMMANDS layout.

Layout: ``$FRAMEWORK_DATA_DIR/SpeechCommands/speech_commands_v0.02/<word>/<speaker>_nohash_<n>.wav``
with ``validation_list.txt`` and ``testing_list.txt`` beside the word folders (the archive
of download.tensorflow.org unpacked). ``torchaudio.datasets.SPEECHCOMMANDS(download=False)``
lists the files of each official split (``_background_noise_`` excluded); the WAVs are read
with soundfile, as ``torchaudio.load`` needs torchcodec. Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from torchaudio.datasets import SPEECHCOMMANDS

from framework.data import TextFile, dataset_dir
from framework.errors import ConfigError
from framework.values import NonNegativeInt, PositiveFloat, PositiveInt

from .clips import AudioDataModule, ClipFiles

SOURCE = "http://download.tensorflow.org/data/speech_commands_v0.02.tar.gz (unpacked into speech_commands_v0.02/)"
SUBSETS = {"train": "training", "val": "validation", "test": "testing"}
LISTS = ("validation_list.txt", "testing_list.txt")


def check_lists(version: Path) -> None:
    """Every line of ``validation_list.txt`` and ``testing_list.txt`` must name a clip of ``version``
    (``<word>/<clip>.wav``), else an error naming the list and the line."""
    for name in LISTS:
        text = TextFile(version / name, "a Speech Commands list of clips")
        for number, line in text.numbered():
            if not (version / line.strip()).is_file():
                raise text.error(number, f"{line.strip()!r} is no clip of {version} (expected <word>/<clip>.wav)")


def list_split(folder: Path, version: str, subset: str) -> list[tuple[Path, str]]:
    """(path, word) of every clip of one official subset (``training``, ``validation``, ``testing``)."""
    listing = SPEECHCOMMANDS(folder.parent, url=version, folder_in_archive=folder.name, download=False, subset=subset)
    return [(folder / relpath, word) for relpath, _, word, _, _ in map(listing.get_metadata, range(len(listing)))]


class SpeechCommands(AudioDataModule):
    """Speech Commands keyword classification with the official train / validation / test lists.

    Args:
        root: the folder holding ``<version>/`` (default ``$FRAMEWORK_DATA_DIR/SpeechCommands``).
        version: ``speech_commands_v0.02`` (35 words) or ``speech_commands_v0.01`` (30).
        words: the words to classify, in label order; clips of other words are left out.
            Default: every word of the training list, sorted.
        sample_rate, duration: 16000 Hz, 1 s (the clips' own format).
        batch_size, eval_batch_size, num_workers: as in SplitDataModule.
    """

    def __init__(
        self,
        root: Optional[str] = None,
        version: str = "speech_commands_v0.02",
        words: Optional[list[str]] = None,
        sample_rate: PositiveInt = 16000,
        duration: PositiveFloat = 1.0,
        batch_size: PositiveInt = 64,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(sample_rate, duration, batch_size, eval_batch_size, num_workers)
        if words is not None and len(set(words)) < 2:
            raise ConfigError(f"data.words must name at least two distinct words, got {words}")
        self.root, self.version, self.words = root, version, list(words) if words is not None else None

    @property
    def num_classes(self) -> Optional[int]:
        """The words classified: known from ``words``, else once set up (the size the CLI gives
        ``model.num_classes`` and ``task.num_classes`` when a config leaves them unset)."""
        words = self.words if self.words is not None else getattr(self, "classes", None)
        return None if words is None else len(words)

    def make_splits(self) -> dict[str, ClipFiles]:
        folder = dataset_dir(
            "SpeechCommands", root=self.root, source=SOURCE, expect=tuple(f"{self.version}/{name}" for name in LISTS)
        )
        check_lists(folder / self.version)
        clips = {name: list_split(folder, self.version, subset) for name, subset in SUBSETS.items()}
        self.sources = {name: f"{folder / self.version} ({subset} list)" for name, subset in SUBSETS.items()}
        found = sorted({word for _, word in clips["train"]})
        words = self.words if self.words is not None else found
        missing = [w for w in words if w not in found]
        if missing:
            raise ConfigError(f"data.words: no training clips of {missing} in {folder / self.version}; it has {found}")
        self.classes = words
        label = {word: i for i, word in enumerate(words)}
        return {
            name: ClipFiles(
                [p for p, w in part if w in label],
                [label[w] for _, w in part if w in label],
                self.sample_rate,
                self.num_samples,
            )
            for name, part in clips.items()
        }
