"""Data of the NLP domain: generated defaults (dates, reviews) and readers of real corpora
(Multi30k, TREC, any labelled corpus); all share a tokeniser trained on the training split."""

from .base import TextData, pad
from .classification import ClassificationCollator, TextClassificationData, holdout, split_sentences
from .dates import DateNormalization, date_pairs, human_date
from .labelled import LabelledText, read_labelled
from .multi30k import Multi30k, read_parallel
from .reviews import GeneratedReviews
from .translation import TranslationCollator, TranslationData
from .trec import TREC, read_trec

__all__ = [
    "TREC",
    "ClassificationCollator",
    "DateNormalization",
    "GeneratedReviews",
    "LabelledText",
    "Multi30k",
    "TextClassificationData",
    "TextData",
    "TranslationCollator",
    "TranslationData",
    "date_pairs",
    "holdout",
    "human_date",
    "pad",
    "read_labelled",
    "read_parallel",
    "read_trec",
    "split_sentences",
]
