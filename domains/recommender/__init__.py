"""The recommender domain: sequential recommendation with self-attention and target attention.

Models: :class:`SASRec` (causal self-attention), :class:`BERT4Rec` (bidirectional, Cloze
training), :class:`DIN` (target attention), and the :class:`GRU4Rec` and
:class:`MostPopular` baselines. Tasks: :class:`NextItemRanking` and
:class:`MaskedItemRanking`, evaluated by full or sampled ranking (HR@k, NDCG@k, MRR).
Data: :class:`GeneratedSequences` (generated, the default), :class:`MovieLens100K` and
:class:`UserItemSequences` (the SASRec file format), split leave-one-out.

Layout: ``data/``, ``models/``, the tasks (``task.py``), ``metrics.py`` and ``pictures.py``
(the history attention). Configs: ``<model>.yaml`` (generated histories,
``datasets/generated.yaml``; DIN ``datasets/generated_last20.yaml``) and ``<model>_ml100k.yaml``
(``datasets/ml100k.yaml``; DIN ``datasets/ml100k_batch64_eval32.yaml``, the most-popular
baseline ``datasets/ml100k_whole_history.yaml``).
"""

from .data import GeneratedSequences, MovieLens100K, SequenceData, UserItemSequences
from .metrics import MRR, NDCG, HitRate
from .models import BERT4Rec, DIN, GRU4Rec, MostPopular, SASRec
from .task import MaskedItemRanking, NextItemRanking, SequentialRanking

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
