"""Callbacks the CLI adds to every run."""

from .attention_maps import AttentionMaps
from .attention_stats import AttentionStatistics
from .checkpoints import RunCheckpoint
from .collapse import AttentionCollapse
from .early_stopping import RunEarlyStopping
from .guard import NonFiniteGuard
from .prediction_writer import PredictionWriter
from .progress_bar import ProgressBar
from .resume import ResumePoints
from .run_summary import RunSummary
from .stop import StopAtBatchEnd

__all__ = [
    "AttentionCollapse",
    "AttentionMaps",
    "AttentionStatistics",
    "NonFiniteGuard",
    "PredictionWriter",
    "ProgressBar",
    "ResumePoints",
    "RunCheckpoint",
    "RunEarlyStopping",
    "RunSummary",
    "StopAtBatchEnd",
]
