"""Data conventions shared by the domains."""

from .cache import content_key, load_or_rebuild
from .formats import MOVIELENS_RATINGS
from .generated import GeneratedSplits, seeded_splits, split_seed, split_sizes
from .invariants import DataSet, Field, Format, Labels, Reference, Rows, check_paired, check_reference
from .lines import TextFile
from .media import check_audio, check_label_values, image_header, read_audio, read_image
from .module import SPLITS, SplitDataModule
from .paths import (
    CACHE_DIR_ENV,
    DATA_DIR_ENV,
    DataError,
    DataNotFoundError,
    cache_dir,
    data_root,
    dataset_dir,
    not_empty,
    reading,
    unpickle,
)
from .tensors import Batch, TensorExamples, collate

__all__ = [
    "CACHE_DIR_ENV",
    "DATA_DIR_ENV",
    "MOVIELENS_RATINGS",
    "SPLITS",
    "Batch",
    "DataError",
    "DataNotFoundError",
    "DataSet",
    "Field",
    "Format",
    "GeneratedSplits",
    "Labels",
    "Reference",
    "Rows",
    "SplitDataModule",
    "TensorExamples",
    "TextFile",
    "cache_dir",
    "check_audio",
    "check_label_values",
    "check_paired",
    "check_reference",
    "collate",
    "content_key",
    "data_root",
    "dataset_dir",
    "image_header",
    "load_or_rebuild",
    "not_empty",
    "read_audio",
    "read_image",
    "reading",
    "seeded_splits",
    "split_seed",
    "split_sizes",
    "unpickle",
]
