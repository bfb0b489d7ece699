"""TREC question classification (Li & Roth, COLING 2002): 5452 training and 500 test questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np

from framework.data import DataSet, Field, Format, Reference, Rows, dataset_dir
from framework.values import PositiveInt, Seed

from .classification import TextClassificationData, holdout

FILES = {"train": "train_5500.label", "test": "TREC_10.label"}
SOURCE = "https://cogcomp.seas.upenn.edu/Data/QA/QC/ (train_5500.label, TREC_10.label; SentEval's data/TREC)"
#: The taxonomy's 6 coarse classes and their 50 fine ones.
FINE = {
    "ABBR": ("abb", "exp"),
    "DESC": ("def", "desc", "manner", "reason"),
    "ENTY": (
        "animal",
        "body",
        "color",
        "cremat",
        "currency",
        "dismed",
        "event",
        "food",
        "instru",
        "lang",
        "letter",
        "other",
        "plant",
        "product",
        "religion",
        "sport",
        "substance",
        "symbol",
        "techmeth",
        "termeq",
        "veh",
        "word",
    ),
    "HUM": ("desc", "gr", "ind", "title"),
    "LOC": ("city", "country", "mount", "other", "state"),
    "NUM": (
        "code",
        "count",
        "date",
        "dist",
        "money",
        "ord",
        "other",
        "perc",
        "period",
        "speed",
        "temp",
        "volsize",
        "weight",
    ),
}
LABELS = frozenset(f"{coarse}:{fine}" for coarse, fines in FINE.items() for fine in fines)
#: A UIUC label file (latin-1): a label of the taxonomy, a space, the question.
LABEL_FILE = Format(
    "a TREC label file",
    (Field("label", text=True, known=LABELS), Field("question", text=True)),
    " ",
    "'COARSE:fine question' (a label, a space, the question)",
    "latin-1",
    rest=True,
)
#: The test file's classes (coarse or fine, as trained) are classes of the training file.
TREC_FILES = DataSet(
    "TREC", {"train": LABEL_FILE, "test": LABEL_FILE}, references=(Reference("test", "class", "train", "class"),)
)


def read_trec(path: Path, fine: bool = False) -> Rows:
    """The questions of a UIUC label file (:data:`LABEL_FILE`) with their ``class``: the coarse
    class (6: ABBR, DESC, ENTY, HUM, LOC, NUM) or, with ``fine``, ``COARSE:fine`` (50 classes).
    A line of another shape or a label outside the taxonomy is an error naming the file and line."""
    rows = LABEL_FILE.read(path)
    rows.columns["class"] = (
        rows["label"] if fine else np.array([label.split(":")[0] for label in rows["label"]], object)
    )
    return rows


def pairs(rows: Rows) -> list[tuple[str, str]]:
    """``(question, class)`` of every row."""
    return list(zip(rows["question"], rows["class"]))


class TREC(TextClassificationData):
    """TREC-6 (or TREC-50 with ``fine``) from ``$FRAMEWORK_DATA_DIR/TREC`` in the UIUC layout.

    The official data has no validation split: ``val_size`` training questions, drawn with
    ``seed``, are held out; ``test`` is the 500 TREC-10 questions, whose labels must all occur
    in the training file.

    Args:
        root: the folder, instead of ``$FRAMEWORK_DATA_DIR/TREC``.
        fine: 50 fine classes instead of 6 coarse ones.
        val_size, seed: the held-out validation split.
        **kwargs: tokeniser, sentence and loader options of ``TextClassificationData``
            (the questions are tokenised already: ``tokenizer: word``).
    """

    def __init__(
        self,
        root: Optional[str] = None,
        fine: bool = False,
        val_size: PositiveInt = 500,
        seed: Seed = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.root, self.fine, self.val_size, self.seed = root, fine, val_size, seed

    def read(self) -> dict[str, list[tuple[str, str]]]:
        folder = dataset_dir("TREC", root=self.root, source=SOURCE, expect=tuple(FILES.values()))
        train_file, test_file = folder / FILES["train"], folder / FILES["test"]
        self.sources = {"train": str(train_file), "val": str(train_file), "test": str(test_file)}
        rows = {"train": read_trec(train_file, self.fine), "test": read_trec(test_file, self.fine)}
        TREC_FILES.check(rows)
        train, val = holdout(pairs(rows["train"]), self.val_size, self.seed)
        return {"train": train, "val": val, "test": pairs(rows["test"])}
