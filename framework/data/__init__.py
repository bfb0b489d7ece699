"""Data conventions shared by the domains."""

from .module import SPLITS, SplitDataModule
from .paths import CACHE_DIR_ENV, DATA_DIR_ENV, DataNotFoundError, cache_dir, data_root, dataset_dir

__all__ = ["CACHE_DIR_ENV", "DATA_DIR_ENV", "SPLITS", "DataNotFoundError", "SplitDataModule", "cache_dir", "data_root", "dataset_dir"]
