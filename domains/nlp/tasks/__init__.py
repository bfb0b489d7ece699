"""Tasks of the NLP domain: text classification and sequence-to-sequence translation, both
keeping their tokeniser in the checkpoint."""

from .classification import TextClassification
from .state import TokenizerState
from .translation import Translation

__all__ = ["TextClassification", "TokenizerState", "Translation"]
