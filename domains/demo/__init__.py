"""The demo: associative recall, a generated task that only attention solves, with a small
sequence classifier (``domains/demo/demo.yaml``; no data folder, trains in a minute)."""

from .data import AssociativeRecall, RecallDataset
from .models import SequenceClassifier

__all__ = ["AssociativeRecall", "RecallDataset", "SequenceClassifier"]
