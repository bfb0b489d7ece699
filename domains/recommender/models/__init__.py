"""Recommender models: SASRec, BERT4Rec, DIN, and the GRU4Rec and most-popular baselines."""

from .base import SequentialRecommender, check_history
from .din import DIN
from .gru4rec import GRU4Rec
from .popularity import MostPopular
from .self_attentive import BERT4Rec, SASRec, SelfAttentiveRecommender

__all__ = [
    "BERT4Rec",
    "DIN",
    "GRU4Rec",
    "MostPopular",
    "SASRec",
    "SelfAttentiveRecommender",
    "SequentialRecommender",
    "check_history",
]
