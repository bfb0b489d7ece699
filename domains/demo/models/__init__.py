"""The demo's model: a token-sequence classifier over any sequence block."""

from .classifier import SequenceClassifier

__all__ = ["SequenceClassifier"]
