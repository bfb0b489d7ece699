"""Data of the NLP domain: generated defaults (dates, reviews) and readers of real corpora
(Multi30k, TREC, any labelled corpus); all share a tokeniser trained on the training split."""

from .base import TextData, pad
from .classification import ClassificationCollator, TextClassificationData, holdout, split_sentences
from .dates import DateNormalization, date_pairs
from .labelled import LabelledText, read_labelled
from .long_range import LongRangeMatch, long_range_text
from .multi30k import Multi30k, read_parallel
from .reviews import GeneratedReviews
from .sorting import NumberSorting, SortingExamples
from .translation import TranslationCollator, TranslationData
from .trec import TREC, read_trec

__all__ = [
    "TREC",
    "ClassificationCollator",
    "DateNormalization",
    "GeneratedReviews",
    "LabelledText",
    "LongRangeMatch",
    "Multi30k",
    "NumberSorting",
    "SortingExamples",
    "TextClassificationData",
    "TextData",
    "TranslationCollator",
    "TranslationData",
    "date_pairs",
    "holdout",
    "long_range_text",
    "pad",
    "read_labelled",
    "read_parallel",
    "read_trec",
    "split_sentences",
]
