"""The demo: generated tasks that only attention solves, no data folder, each trained in a minute.
Associative recall with a small sequence classifier (``domains/demo/demo.yaml``); counting the
distinct elements of a set with a Set Transformer (``domains/demo/sets.yaml``)."""

from .data import AssociativeRecall, RecallDataset, UniqueCount, UniqueCountDataset
from .models import SequenceClassifier, SetClassifier

__all__ = ["AssociativeRecall", "RecallDataset", "SequenceClassifier", "SetClassifier", "UniqueCount",
           "UniqueCountDataset"]
