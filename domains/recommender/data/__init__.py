"""Recommender data: interaction readers, generated histories, leave-one-out data modules."""

from .datasets import RankingQueries, TrainSequences, left_pad, sample_negatives
from .generated import TasteChain, taste_histories
from .interactions import filter_min_counts, index_items, leave_one_out, read_movielens, read_user_item_lines
from .modules import GeneratedSequences, LoggedSequences, MovieLens100K, SequenceData, UserItemSequences

__all__ = [
    "GeneratedSequences",
    "LoggedSequences",
    "MovieLens100K",
    "RankingQueries",
    "SequenceData",
    "TasteChain",
    "TrainSequences",
    "UserItemSequences",
    "filter_min_counts",
    "index_items",
    "leave_one_out",
    "left_pad",
    "read_movielens",
    "read_user_item_lines",
    "sample_negatives",
    "taste_histories",
]
