"""Any sentence-per-line labelled corpus: a TSV file, or a text file and a label file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from framework.data import dataset_dir

from .classification import TextClassificationData, holdout


def read_labelled(files: list[Path], label_column: int = 0, encoding: str = "utf-8") -> list[tuple[str, str]]:
    """``(text, label)`` pairs from ``[file.tsv]`` (two tab-separated columns, the label in
    ``label_column``) or from ``[texts, labels]`` (two line-aligned files)."""
    if len(files) == 1:
        pairs = []
        for number, line in enumerate(files[0].read_text(encoding=encoding).splitlines(), 1):
            if not line.strip():
                continue
            columns = line.split("\t", 1)
            if len(columns) != 2:
                raise ValueError(f"{files[0]}:{number}: expected 'label<TAB>text' (two columns), got {line[:60]!r}")
            label = columns[label_column].strip()
            pairs.append((columns[1 - label_column].strip(), label))
        return pairs
    if len(files) == 2:
        texts, labels = (f.read_text(encoding=encoding).splitlines() for f in files)
        if len(texts) != len(labels):
            raise ValueError(f"{files[0]} has {len(texts)} lines but {files[1]} has {len(labels)}; they must be line-aligned")
        return [(t.strip(), y.strip()) for t, y in zip(texts, labels) if t.strip()]
    raise ValueError(f"data.splits: each split names one TSV file or a text file and a label file, got {len(files)} files")


class LabelledText(TextClassificationData):
    """A labelled corpus in a folder, one example per line, read as it is.

    Args:
        root: the folder (``data.root``).
        splits: per split the files, relative to ``root``: ``[train.tsv]`` or
            ``[train.txt, train.labels]``. Without a ``val`` entry, ``val_size`` examples of
            ``train`` are held out (drawn with ``seed``).
        label_column: the label's column (0 or 1) in TSV files.
        encoding: of every file (``latin-1`` for some older corpora).
        val_size, seed: the held-out validation split.
        **kwargs: tokeniser, sentence and loader options of ``TextClassificationData``.

    Example::

        data:
          class_path: domains.nlp.LabelledText
          init_args: {root: /data/sst2, splits: {train: [train.tsv], test: [test.tsv]}}
    """

    def __init__(self, root: str, splits: dict[str, list[str]], label_column: int = 0, encoding: str = "utf-8",
                 val_size: int = 500, seed: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if "train" not in splits:
            raise ValueError(f"data.splits must name a 'train' split, got {sorted(splits)}")
        if label_column not in (0, 1):
            raise ValueError(f"data.label_column must be 0 or 1, got {label_column}")
        self.root, self.split_files, self.label_column = root, splits, label_column
        self.encoding, self.val_size, self.seed = encoding, val_size, seed

    def read(self) -> dict[str, list[tuple[str, str]]]:
        expect = [name for files in self.split_files.values() for name in files]
        folder = dataset_dir(Path(self.root).name, root=self.root, source="your corpus", expect=expect)
        named = {split: read_labelled([folder / f for f in files], self.label_column, self.encoding)
                 for split, files in self.split_files.items()}
        if "val" not in named:
            named["train"], named["val"] = holdout(named["train"], self.val_size, self.seed)
        return named
