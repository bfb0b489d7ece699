"""Recommender data: interaction readers, generated histories, negatives, leave-one-out data modules."""

from .datasets import RankingQueries, TrainSequences, flatten, left_pad, left_window
from .generated import TasteChain, taste_histories
from .interactions import filter_min_counts, index_items, read_movielens, read_user_item_lines
from .modules import GeneratedSequences, LoggedSequences, MovieLens100K, SequenceData, UserItemSequences
from .negatives import cached_negatives, negatives_key, sample_negatives

__all__ = [
    "GeneratedSequences",
    "LoggedSequences",
    "MovieLens100K",
    "RankingQueries",
    "SequenceData",
    "TasteChain",
    "TrainSequences",
    "UserItemSequences",
    "cached_negatives",
    "filter_min_counts",
    "flatten",
    "index_items",
    "left_pad",
    "left_window",
    "negatives_key",
    "read_movielens",
    "read_user_item_lines",
    "sample_negatives",
    "taste_histories",
]
