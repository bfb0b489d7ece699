"""The general attention model of the surveys: score functions, distribution functions,
and the ``Attention`` module that composes them (with its catalogue presets)."""

from .attention import Attention, AttentionOutput
from .distribution import DISTRIBUTIONS, Distribution
from .score import SCORES, Score

__all__ = ["DISTRIBUTIONS", "SCORES", "Attention", "AttentionOutput", "Distribution", "Score"]
