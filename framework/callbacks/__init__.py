"""Callbacks the CLI adds to every run."""

from .attention_maps import AttentionMaps
from .attention_stats import AttentionStatistics
from .checkpoints import RunCheckpoint
from .collapse import AttentionCollapse
from .early_stopping import RunEarlyStopping
from .guard import NonFiniteGuard
from .model_summary import ModelSummary
from .prediction_writer import PredictionWriter
from .progress_bar import PlainProgress, ProgressBar, progress_bar
from .resume import ResumePoints
from .run_summary import RunSummary
from .stop import StopAtBatchEnd

__all__ = [
    "AttentionCollapse",
    "AttentionMaps",
    "AttentionStatistics",
    "ModelSummary",
    "NonFiniteGuard",
    "PlainProgress",
    "PredictionWriter",
    "ProgressBar",
    "ResumePoints",
    "RunCheckpoint",
    "RunEarlyStopping",
    "RunSummary",
    "StopAtBatchEnd",
    "progress_bar",
]
