"""Callbacks the CLI adds to every run."""

from .attention_maps import AttentionMaps, heatmap
from .summary import RunSummary

__all__ = ["AttentionMaps", "RunSummary", "heatmap"]
