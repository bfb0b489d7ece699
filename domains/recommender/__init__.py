"""The recommender domain: sequential recommendation with self-attention and target attention.

Models: :class:`SASRec` (causal self-attention), :class:`BERT4Rec` (bidirectional, Cloze
training), :class:`DIN` (target attention), and the :class:`GRU4Rec` and
:class:`MostPopular` baselines. Tasks: :class:`NextItemRanking` and
:class:`MaskedItemRanking`, evaluated by full or sampled ranking (HR@k, NDCG@k, MRR).
Data: :class:`GeneratedSequences` (generated, the default), :class:`MovieLens100K` and
:class:`UserItemSequences` (the SASRec file format), split leave-one-out.
"""

from .data import GeneratedSequences, MovieLens100K, SequenceData, UserItemSequences
from .metrics import MRR, NDCG, HitRate
from .models import BERT4Rec, DIN, GRU4Rec, MostPopular, SASRec
from .tasks import MaskedItemRanking, NextItemRanking, SequentialRanking

__all__ = [
    "BERT4Rec",
    "DIN",
    "GRU4Rec",
    "GeneratedSequences",
    "HitRate",
    "MRR",
    "MaskedItemRanking",
    "MostPopular",
    "MovieLens100K",
    "NDCG",
    "NextItemRanking",
    "SASRec",
    "SequenceData",
    "SequentialRanking",
    "UserItemSequences",
]
