"""Callbacks the CLI adds to every run."""

from .attention_maps import AttentionMaps
from .attention_stats import AttentionStatistics
from .checkpoints import RunCheckpoint
from .collapse import AttentionCollapse
from .guard import NonFiniteGuard
from .predictions import PredictionWriter
from .progress import ProgressBar
from .resume import ResumePoints
from .summary import RunSummary

__all__ = ["AttentionCollapse", "AttentionMaps", "AttentionStatistics", "NonFiniteGuard", "PredictionWriter", "ProgressBar",
           "ResumePoints", "RunCheckpoint", "RunSummary"]
