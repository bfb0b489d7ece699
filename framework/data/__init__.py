"""Data conventions shared by the domains."""

from .module import SPLITS, SplitDataModule
from .paths import DATA_DIR_ENV, DataNotFoundError, data_root, dataset_dir

__all__ = ["DATA_DIR_ENV", "SPLITS", "DataNotFoundError", "SplitDataModule", "data_root", "dataset_dir"]
