"""The NLP domain: attentive text classification and sequence-to-sequence translation.

* ``data``: generated defaults (dates -> ISO dates, reviews, number sorting) and readers of
  Multi30k, TREC and any labelled corpus; one ``tokenizers`` tokeniser per run, trained on the training
  split (``data.tokenization``).
* ``models``: the self-attentive sentence embedding, the hierarchical attention network, a
  Transformer classifier; a recurrent encoder-decoder with Bahdanau or Luong attention and
  a Transformer encoder-decoder (the recurrent one with a copy mechanism: ``copy``); a
  pointer network.
* ``tasks``: ``TextClassification``, ``CapsuleClassification`` and ``Translation`` (their
  checkpoints carry the tokeniser), ``Ordering`` (the pointer network's permutations), a module each.
* ``decoding``: greedy and beam search (the core's, with NLP's special tokens); ``metrics``;
  ``pictures``: alignments and highlights.

Configs (they name the classes below as ``domains.nlp.<name>``): ``selfattentive.yaml``,
``transformer_cls.yaml`` (generated reviews, ``datasets/reviews.yaml``), ``han.yaml``
(``datasets/reviews_sentences.yaml``), their ``*_trec.yaml`` twins (``datasets/trec.yaml``,
``datasets/trec_sentences.yaml``), ``seq2seq_bahdanau.yaml``, ``seq2seq_luong.yaml``,
``transformer_mt.yaml``, ``seq2seq_copy.yaml`` (dates, ``datasets/dates.yaml``) and their
``*_multi30k.yaml`` twins (``datasets/multi30k.yaml``); ``pointer_sort.yaml``
(``datasets/sorting.yaml``).
"""

from .data import TREC, DateNormalization, GeneratedReviews, LabelledText, LongRangeMatch, Multi30k, NumberSorting
from .metrics import ExactMatch, TokenAccuracy
from .models import (
    CharacterWordClassifier,
    HierarchicalAttentionNetwork,
    PointerNetwork,
    RecurrentSeq2Seq,
    SelfAttentiveClassifier,
    TransformerClassifier,
    TransformerSeq2Seq,
)
from .tasks import CapsuleClassification, Ordering, TextClassification, TokenizerState, Translation

__all__ = [
    "TREC",
    "CapsuleClassification",
    "CharacterWordClassifier",
    "DateNormalization",
    "ExactMatch",
    "GeneratedReviews",
    "HierarchicalAttentionNetwork",
    "LabelledText",
    "LongRangeMatch",
    "Multi30k",
    "NumberSorting",
    "Ordering",
    "PointerNetwork",
    "RecurrentSeq2Seq",
    "SelfAttentiveClassifier",
    "TextClassification",
    "TokenizerState",
    "TokenAccuracy",
    "TransformerClassifier",
    "TransformerSeq2Seq",
    "Translation",
]
