"""Multi30k (Elliott et al., 2016), task 1: image captions in German and English, line-aligned."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

from framework.data import DataSet, Format, Rows, TextFile, dataset_dir
from framework.errors import ConfigError
from framework.values import PositiveInt

from .translation import TranslationData

SPLIT_FILES = {"train": "train", "val": "val", "test": "test_2016_flickr"}
SOURCE = "https://github.com/multi30k/dataset (data/task1/raw: train, val and test_2016_flickr .de.gz/.en.gz)"
#: A language of the corpus (``data.source_lang``, ``data.target_lang``).
Language = Literal["de", "en"]
SENTENCES = Format("gzip-compressed UTF-8 text, a sentence per line")
#: Line i of the source file is translated by line i of the target file.
PARALLEL = DataSet("a parallel corpus", {"source": SENTENCES, "target": SENTENCES}, paired=(("source", "target"),))


def read_parallel(source: Path, target: Path, limit: Optional[int] = None) -> list[tuple[str, str]]:
    """Line-aligned ``(source, target)`` sentence pairs of two gzip-compressed UTF-8 files. Files
    of different lengths, or an empty line (a sentence without its translation), are an error
    naming the file (and line)."""
    sources, targets = (TextFile(path, SENTENCES.what) for path in (source, target))
    PARALLEL.check({name: Rows.of_lines(text) for name, text in (("source", sources), ("target", targets))})
    for text in (sources, targets):
        blank = next((number for number, line in enumerate(text.lines, 1) if not line.strip()), None)
        if blank is not None:
            raise text.error(blank, "an empty line: every line is a sentence, aligned with the other file's")
    return [(a.strip(), b.strip()) for a, b in zip(sources.lines, targets.lines)][:limit]


class Multi30k(TranslationData):
    """Multi30k from ``$FRAMEWORK_DATA_DIR/multi30k`` (raw gzip files): 29000 training, 1014
    validation and 1000 test (test_2016_flickr) pairs.

    Args:
        root: the folder, instead of ``$FRAMEWORK_DATA_DIR/multi30k``.
        source_lang, target_lang: ``de`` and ``en`` (either way round).
        train_size: use only the first ``train_size`` training pairs (quick runs).
        **kwargs: tokeniser and loader options of ``TranslationData`` (``tokenizer: bpe``).
    """

    def __init__(
        self,
        root: Optional[str] = None,
        source_lang: Language = "de",
        target_lang: Language = "en",
        train_size: Optional[PositiveInt] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if source_lang == target_lang:
            raise ConfigError(
                f"data.source_lang and data.target_lang must be 'de' and 'en' (either way round), "
                f"got {source_lang!r} and {target_lang!r}"
            )
        self.root, self.source_lang, self.target_lang, self.train_size = root, source_lang, target_lang, train_size

    def make_splits(self) -> dict[str, list[tuple[str, str]]]:
        names = [f"{f}.{lang}.gz" for f in SPLIT_FILES.values() for lang in ("de", "en")]
        folder = dataset_dir("multi30k", root=self.root, source=SOURCE, expect=names)
        self.sources = {split: f"{folder / name}.de.gz, {name}.en.gz" for split, name in SPLIT_FILES.items()}
        return {
            split: read_parallel(
                folder / f"{name}.{self.source_lang}.gz",
                folder / f"{name}.{self.target_lang}.gz",
                self.train_size if split == "train" else None,
            )
            for split, name in SPLIT_FILES.items()
        }
