"""The demo's data: generated associative recall, and generated sets whose distinct elements are counted."""

from .recall import AssociativeRecall, RecallDataset
from .sets import UniqueCount, UniqueCountDataset

__all__ = ["AssociativeRecall", "RecallDataset", "UniqueCount", "UniqueCountDataset"]
