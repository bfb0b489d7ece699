"""Any sentence-per-line labelled corpus: a TSV file, or a text file and a label file."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

import numpy as np

from framework.data import DataSet, Field, Format, Reference, Rows, TextFile, dataset_dir
from framework.errors import ConfigError
from framework.values import PositiveInt, Seed

from .classification import TextClassificationData, holdout

LABEL, TEXT = Field("label", text=True), Field("text", text=True)
#: A labelled TSV file by the label's column (``data.label_column``): two tab-separated fields,
#: neither empty.
TSV = {
    0: Format("a labelled TSV file", (LABEL, TEXT), "\t", "'label<TAB>text'"),
    1: Format("a labelled TSV file", (TEXT, LABEL), "\t", "'text<TAB>label'"),
}
#: A corpus' invariants: a text file and its label file pair line by line, and the labels of
#: every other split are labels of the training split (a class the model never learnt is no test).
LABELLED = DataSet(
    "a labelled corpus",
    {"train": TSV[0], "split": TSV[0], "texts": Format("texts"), "labels": Format("labels")},
    references=(Reference("split", "label", "train", "label"),),
    paired=(("texts", "labels"),),
)


def read_labelled(files: list[Path], label_column: int = 0, encoding: str = "utf-8") -> Rows:
    """The examples of ``[file.tsv]`` (:data:`TSV`: two tab-separated columns, the label in
    ``label_column``) or of ``[texts, labels]`` (two line-aligned files; lines of blank text are
    left out): columns ``text`` and ``label``, each row at its line of the TSV or label file. A
    line of another shape, an empty label or text, or files of different lengths are an error
    naming the file (and line)."""
    if len(files) == 1:
        return dataclasses.replace(TSV[label_column], encoding=encoding).read(files[0])
    if len(files) != 2:
        raise ConfigError(
            f"data.splits: each split names one TSV file or a text file and a label file, got {len(files)} files"
        )
    texts, labels = (TextFile(f, what, encoding) for f, what in zip(files, ("texts", "labels")))
    LABELLED.check({"texts": Rows.of_lines(texts), "labels": Rows.of_lines(labels)})
    rows = [
        (number, t.strip(), y.strip()) for number, (t, y) in enumerate(zip(texts.lines, labels.lines), 1) if t.strip()
    ]
    empty = next((number for number, _, label in rows if not label), None)
    if empty is not None:
        raise labels.error(empty, "the label is empty")
    columns = {
        "text": np.array([t for _, t, _ in rows], dtype=object),
        "label": np.array([y for *_, y in rows], dtype=object),
    }
    return Rows(labels.path, columns, np.array([number for number, *_ in rows], dtype=np.int64))


class LabelledText(TextClassificationData):
    """A labelled corpus in a folder, one example per line, read as it is.

    Args:
        root: the folder (``data.root``).
        splits: per split the files, relative to ``root``: ``[train.tsv]`` or
            ``[train.txt, train.labels]``. Without a ``val`` entry, ``val_size`` examples of
            ``train`` are held out (drawn with ``seed``).
        label_column: the label's column (0 or 1) in TSV files. Every label of another split must
            occur in ``train``.
        encoding: of every file (``latin-1`` for some older corpora).
        val_size, seed: the held-out validation split.
        **kwargs: tokeniser, sentence and loader options of ``TextClassificationData``.

    Example::

        data:
          class_path: domains.nlp.LabelledText
          init_args: {root: /data/sst2, splits: {train: [train.tsv], test: [test.tsv]}}
    """

    def __init__(
        self,
        root: str,
        splits: dict[str, list[str]],
        label_column: Literal[0, 1] = 0,
        encoding: str = "utf-8",
        val_size: PositiveInt = 500,
        seed: Seed = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if "train" not in splits:
            raise ConfigError(f"data.splits must name a 'train' split, got {sorted(splits)}")
        self.root, self.split_files, self.label_column = root, splits, label_column
        self.encoding, self.val_size, self.seed = encoding, val_size, seed

    def read(self) -> dict[str, list[tuple[str, str]]]:
        expect = [name for files in self.split_files.values() for name in files]
        folder = dataset_dir(Path(self.root).name, root=self.root, source="your corpus", expect=expect)
        paths = {split: [folder / name for name in files] for split, files in self.split_files.items()}
        self.sources = {split: ", ".join(map(str, files)) for split, files in paths.items()}
        rows = {split: read_labelled(files, self.label_column, self.encoding) for split, files in paths.items()}
        for split in sorted(paths.keys() - {"train"}):
            LABELLED.check({"split": rows[split], "train": rows["train"]})
        named = {split: list(zip(part["text"], part["label"])) for split, part in rows.items()}
        if "val" not in named:
            named["train"], named["val"] = holdout(named["train"], self.val_size, self.seed)
            self.sources["val"] = self.sources["train"]
        return named
