"""The NLP domain's tasks, one module each: text classification (``classification``, and by
capsules, ``capsule``), translation (``translation``) and the pointer network's ordering
(``ordering``); the text tasks keep their tokeniser in the checkpoint (``tokenizer``)."""

from .capsule import CapsuleClassification
from .classification import TextClassification
from .ordering import Ordering
from .tokenizer import TokenizerState
from .translation import Translation

__all__ = ["CapsuleClassification", "Ordering", "TextClassification", "TokenizerState", "Translation"]
