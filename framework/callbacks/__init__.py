"""Callbacks the CLI adds to every run."""

from .attention_maps import AttentionMaps
from .progress import ProgressBar
from .summary import RunSummary

__all__ = ["AttentionMaps", "ProgressBar", "RunSummary"]
