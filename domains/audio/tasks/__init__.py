"""The audio domain's tasks: clip classification with attention over time (``classification``)
and attention-based recognition of digit strings (``recognition``)."""

from .classification import AudioClassification
from .recognition import SequenceRecognition

__all__ = ["AudioClassification", "SequenceRecognition"]
