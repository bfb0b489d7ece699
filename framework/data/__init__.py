"""Data conventions shared by the domains."""

from .cache import content_key, load_or_rebuild
from .module import SPLITS, SplitDataModule
from .paths import CACHE_DIR_ENV, DATA_DIR_ENV, DataError, DataNotFoundError, cache_dir, data_root, dataset_dir, reading
from .tensors import Batch, TensorExamples, collate

__all__ = [
    "CACHE_DIR_ENV", "DATA_DIR_ENV", "SPLITS", "Batch", "DataError", "DataNotFoundError", "SplitDataModule",
    "TensorExamples", "cache_dir", "collate", "content_key", "data_root", "dataset_dir", "load_or_rebuild", "reading",
]
