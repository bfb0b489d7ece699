"""The demo: generated tasks that only attention solves, no data folder, each trained in a minute.
Associative recall with a small sequence classifier (``domains/demo/demo.yaml``); counting the
distinct elements of a set with a Set Transformer (``domains/demo/sets.yaml``); both classified
by ``SequenceClassification`` (``task.py``: the evaluation's hooks over the tokens)."""

from .data import AssociativeRecall, RecallDataset, UniqueCount, UniqueCountDataset
from .models import SequenceClassifier, SetClassifier
from .task import SequenceClassification

__all__ = [
    "AssociativeRecall",
    "RecallDataset",
    "SequenceClassification",
    "SequenceClassifier",
    "SetClassifier",
    "UniqueCount",
    "UniqueCountDataset",
]
