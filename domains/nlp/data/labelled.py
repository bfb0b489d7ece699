"""Any sentence-per-line labelled corpus: a TSV file, or a text file and a label file."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal, Optional

from framework.data import DataError, TextFile, dataset_dir
from framework.errors import ConfigError
from framework.values import PositiveInt, Seed

from .classification import TextClassificationData, holdout


def read_labelled(
    files: list[Path],
    label_column: int = 0,
    encoding: str = "utf-8",
    seen: Optional[Collection[str]] = None,
    seen_in: str = "",
) -> list[tuple[str, str]]:
    """``(text, label)`` pairs from ``[file.tsv]`` (two tab-separated columns, the label in
    ``label_column``) or from ``[texts, labels]`` (two line-aligned files). A line of another
    shape, an empty label or text, or a label not in ``seen`` (the training split's, read from
    ``seen_in``) is an error naming the file and line."""
    if len(files) == 1:
        text = TextFile(files[0], "a labelled TSV file", encoding)
        rows = [
            (number, columns[1 - label_column].strip(), columns[label_column].strip(), text)
            for number, columns in text.fields("\t", 2, ("'label<TAB>text'", "'text<TAB>label'")[label_column])
        ]
    elif len(files) == 2:
        texts, labels = (TextFile(f, what, encoding) for f, what in zip(files, ("texts", "labels")))
        if len(texts.lines) != len(labels.lines):
            raise DataError(
                f"{files[0]} has {len(texts.lines)} lines but {files[1]} has {len(labels.lines)}; they "
                "must be line-aligned"
            )
        rows = [
            (number, t.strip(), y.strip(), labels)
            for number, (t, y) in enumerate(zip(texts.lines, labels.lines), 1)
            if t.strip()
        ]
    else:
        raise ConfigError(
            f"data.splits: each split names one TSV file or a text file and a label file, got {len(files)} files"
        )
    for number, content, label, source in rows:
        if not label or not content:
            raise source.error(number, f"the {'label' if not label else 'text'} is empty")
        if seen is not None:
            source.known(number, label, seen, "label", f" in the training split ({seen_in})")
    return [(text, label) for _, text, label, _ in rows]


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
        named = {"train": read_labelled(paths["train"], self.label_column, self.encoding)}
        seen = {label for _, label in named["train"]}
        for split in paths.keys() - {"train"}:
            named[split] = read_labelled(paths[split], self.label_column, self.encoding, seen, self.sources["train"])
        if "val" not in named:
            named["train"], named["val"] = holdout(named["train"], self.val_size, self.seed)
            self.sources["val"] = self.sources["train"]
        return named
