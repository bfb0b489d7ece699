"""The demo's models: a token-sequence classifier over any sequence block, and a set classifier
(an encoder of set blocks and a pooling block: the Set Transformer)."""

from .classifier import SequenceClassifier
from .set_classifier import SetClassifier

__all__ = ["SequenceClassifier", "SetClassifier"]
