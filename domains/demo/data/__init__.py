"""The demo's data: generated associative recall."""

from .recall import AssociativeRecall, RecallDataset

__all__ = ["AssociativeRecall", "RecallDataset"]
