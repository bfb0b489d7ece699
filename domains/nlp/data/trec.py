"""TREC question classification (Li & Roth, COLING 2002): 5452 training and 500 test questions."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import Any, Optional

from framework.data import TextFile, dataset_dir
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
LINE = re.compile(r"(?P<label>\S+) (?P<question>.*\S.*)")


def read_trec(
    path: Path, fine: bool = False, seen: Optional[Collection[str]] = None, seen_in: str = ""
) -> list[tuple[str, str]]:
    """``(question, label)`` pairs of a UIUC label file (``COARSE:fine question ...``, latin-1).

    The label is the coarse class (6: ABBR, DESC, ENTY, HUM, LOC, NUM) or, with ``fine``,
    ``COARSE:fine`` (50 classes). A line of another shape, a label outside the taxonomy, or
    one not in ``seen`` (the training file's labels, named by ``seen_in``) is an error naming
    the file and line.
    """
    text = TextFile(path, "a TREC label file", encoding="latin-1")
    pairs = []
    for number, match in text.matches(LINE, "'COARSE:fine question' (a label, a space, the question)"):
        label = text.known(number, match["label"], LABELS, "label", " to TREC's taxonomy")
        label = label if fine else label.split(":")[0]
        if seen is not None:
            text.known(number, label, seen, "label", f" in the training file {seen_in}")
        pairs.append((match["question"].strip(), label))
    return pairs


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
        labelled = read_trec(train_file, self.fine)
        test = read_trec(test_file, self.fine, seen={label for _, label in labelled}, seen_in=train_file.name)
        train, val = holdout(labelled, self.val_size, self.seed)
        return {"train": train, "val": val, "test": test}
