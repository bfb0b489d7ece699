"""The recommender domain: sequential recommendation with self-attention and target attention.

Models: :class:`SASRec` (causal self-attention), :class:`BERT4Rec` (bidirectional, Cloze
training), :class:`DIN` (target attention), and the :class:`GRU4Rec` and
:class:`MostPopular` baselines. Tasks: :class:`NextItemRanking` and
:class:`MaskedItemRanking`, trained with SASRec's binary cross-entropy, a sampled softmax or
the full softmax (``task.loss``, :mod:`.losses`) at the real positions of the histories, and
evaluated by full or sampled ranking (HR@k, NDCG@k, MRR). Data: :class:`GeneratedSequences`
(generated, the default), :class:`MovieLens100K` and :class:`UserItemSequences` (the SASRec
file format, taken as it is), split leave-one-out; the negatives of the sampled protocol are
drawn once for all users and cached by the data's content (:mod:`.data.negatives`).

Layout: ``data/``, ``models/``, the tasks (``task.py``) and their losses (``losses.py``),
``metrics.py`` and ``pictures.py`` (the history attention). Configs: ``<model>.yaml``
(generated histories, ``datasets/generated.yaml``; DIN ``datasets/generated_last20.yaml``)
and ``<model>_ml100k.yaml`` (``datasets/ml100k.yaml``; DIN ``datasets/ml100k_batch64_eval32.yaml``).
"""

from .data import GeneratedSequences, MovieLens100K, SequenceData, UserItemSequences
from .metrics import MRR, NDCG, HitRate
from .models import DIN, BERT4Rec, GRU4Rec, MostPopular, SASRec
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
