"""TREC question classification (Li & Roth, COLING 2002): 5452 training and 500 test questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from framework.data import dataset_dir, reading

from .classification import TextClassificationData, holdout

FILES = {"train": "train_5500.label", "test": "TREC_10.label"}
SOURCE = "https://cogcomp.seas.upenn.edu/Data/QA/QC/ (train_5500.label, TREC_10.label; SentEval's data/TREC)"


def read_trec(path: Path, fine: bool = False) -> list[tuple[str, str]]:
    """``(question, label)`` pairs of a UIUC label file (``COARSE:fine question ...``, latin-1).

    The label is the coarse class (6: ABBR, DESC, ENTY, HUM, LOC, NUM) or, with ``fine``,
    ``COARSE:fine`` (50 classes).
    """
    pairs = []
    with reading(path, "a TREC label file"):
        text = path.read_text(encoding="latin-1")
    for line in text.splitlines():
        if not line.strip():
            continue
        label, _, question = line.partition(" ")
        pairs.append((question.strip(), label if fine else label.split(":")[0]))
    return pairs


class TREC(TextClassificationData):
    """TREC-6 (or TREC-50 with ``fine``) from ``$FRAMEWORK_DATA_DIR/TREC`` in the UIUC layout.

    The official data has no validation split: ``val_size`` training questions, drawn with
    ``seed``, are held out; ``test`` is the 500 TREC-10 questions.

    Args:
        root: the folder, instead of ``$FRAMEWORK_DATA_DIR/TREC``.
        fine: 50 fine classes instead of 6 coarse ones.
        val_size, seed: the held-out validation split.
        **kwargs: tokeniser, sentence and loader options of ``TextClassificationData``
            (the questions are tokenised already: ``tokenizer: word``).
    """

    def __init__(self, root: Optional[str] = None, fine: bool = False, val_size: int = 500, seed: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root, self.fine, self.val_size, self.seed = root, fine, val_size, seed

    def read(self) -> dict[str, list[tuple[str, str]]]:
        folder = dataset_dir("TREC", root=self.root, source=SOURCE, expect=tuple(FILES.values()))
        train, val = holdout(read_trec(folder / FILES["train"], self.fine), self.val_size, self.seed)
        return {"train": train, "val": val, "test": read_trec(folder / FILES["test"], self.fine)}
