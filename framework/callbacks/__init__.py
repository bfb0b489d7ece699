"""Callbacks the CLI adds to every run."""

from .attention_maps import AttentionMaps
from .checkpoints import RunCheckpoint
from .guard import NonFiniteGuard
from .predictions import PredictionWriter
from .progress import ProgressBar
from .resume import ResumePoints
from .summary import RunSummary

__all__ = ["AttentionMaps", "NonFiniteGuard", "PredictionWriter", "ProgressBar", "ResumePoints", "RunCheckpoint",
           "RunSummary"]
