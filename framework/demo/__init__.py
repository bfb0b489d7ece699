"""A domain-free demonstration: associative recall with a sequence classifier (configs/demo.yaml)."""

from .data import AssociativeRecall, RecallDataset
from .model import SequenceClassifier

__all__ = ["AssociativeRecall", "RecallDataset", "SequenceClassifier"]
