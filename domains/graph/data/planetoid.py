"""The Planetoid citation graphs (Cora, CiteSeer, PubMed), read by torch_geometric's Planetoid."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Literal, Optional

import numpy as np
from torch_geometric.data import Data, download_url
from torch_geometric.datasets import Planetoid

from framework.data import DataNotFoundError, cache_dir, content_key, dataset_dir, load_or_rebuild, reading

from .base import NodeClassificationData

NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
RAW_FILES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
SOURCE = f"{Planetoid.url} (or set data.download=true)"


class CachedPlanetoid(Planetoid):
    """``Planetoid`` that reads ``raw/`` from ``raw_dir`` and keeps ``processed/`` in
    ``processed_dir``, a writable cache, so that the data folder may be read-only."""

    def __init__(self, name: str, raw_dir: Path, processed_dir: Path, split: str = "public") -> None:
        self._raw_dir, self._processed_dir = raw_dir, processed_dir
        super().__init__(str(processed_dir.parent), name, split=split)

    @property
    def raw_dir(self) -> str:
        return str(self._raw_dir)

    @property
    def processed_dir(self) -> str:
        return str(self._processed_dir)


def check_raw_files(paths: list[Path]) -> None:
    """Read every raw file as PyG will (pickles, and the text list of test nodes), so that a
    damaged one is named (PyG's own errors do not say which file)."""
    for path in paths:
        with reading(path, "a Planetoid raw file"):
            if path.name.endswith("test.index"):
                np.loadtxt(path, dtype=np.int64, ndmin=1)
            else:
                with open(path, "rb") as f:
                    pickle.load(f, encoding="latin1")


class PlanetoidData(NodeClassificationData):
    """Cora (2708 nodes, 1433 features, 7 classes), CiteSeer (3327, 3703, 6) or PubMed
    (19717, 500, 3) with the Planetoid split masks (public: 20 labelled nodes per class,
    500 validation, 1000 test nodes; Yang, Cohen & Salakhutdinov, ICML 2016).

    Reads ``$FRAMEWORK_DATA_DIR/Planetoid/<Name>/raw/ind.<name>.*`` (or ``<data.root>/<Name>/raw``),
    the layout of ``torch_geometric.datasets.Planetoid``. PyG's ``processed/`` folder goes to
    ``framework.data.cache_dir("Planetoid")/<Name>-<key>``, keyed by the raw files' content
    (:func:`framework.data.content_key`), never into the data folder, which may be read-only:
    changed raw files are processed anew, copies of them share one entry, and an entry that
    cannot be read is remade with a warning. Nothing is downloaded unless ``download`` is set;
    then the raw files go to the cache too.

    Args:
        name: ``Cora``, ``CiteSeer`` or ``PubMed`` (any case), as in ``Planetoid``.
        root: the Planetoid folder (holding ``<Name>/raw``), instead of ``$FRAMEWORK_DATA_DIR/Planetoid``.
        split: Planetoid's ``public`` split, ``full`` (every node not in val/test trains) or
            ``random`` (20 per class, drawn from the global seed).
        download: fetch missing raw files from the Planetoid repository into the cache.
        **kwargs: loading options of :class:`NodeClassificationData` (``sampling`` ...).
    """

    def __init__(self, name: str = "Cora", root: Optional[str] = None,
                 split: Literal["public", "full", "random"] = "public", download: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        if name.lower() not in NAMES:
            raise ValueError(f"data.name must be one of {', '.join(NAMES.values())}, got {name!r}")
        if split not in ("public", "full", "random"):
            raise ValueError(f"data.split must be 'public', 'full' or 'random', got {split!r}")
        self.name, self.planetoid_split, self.root, self.download = NAMES[name.lower()], split, root, download

    def raw_dir(self) -> Path:
        """``<Name>/raw`` of the data folder; the cache's with ``download`` when the data folder lacks it."""
        expect = [f"{self.name}/raw/ind.{self.name.lower()}.{part}" for part in RAW_FILES]
        try:
            return dataset_dir("Planetoid", root=self.root, source=SOURCE, expect=expect) / self.name / "raw"
        except DataNotFoundError:
            if not self.download:
                raise
            return cache_dir("Planetoid") / self.name / "raw"

    def raw_files(self) -> list[Path]:
        """The ``ind.<name>.*`` files; with ``download``, those missing are fetched into the cache first."""
        raw_dir = self.raw_dir()
        files = [raw_dir / f"ind.{self.name.lower()}.{part}" for part in RAW_FILES]
        for path in files:
            if not path.is_file():  # only in the cache's raw folder: raw_dir() checked the data folder's
                download_url(f"{Planetoid.url}/{path.name}", str(raw_dir), log=False)
        return files

    def dataset(self) -> CachedPlanetoid:
        """PyG's dataset over the raw files, processed into a cache entry keyed by their content."""
        raw_files = self.raw_files()
        processed_dir = cache_dir("Planetoid") / f"{self.name}-{content_key(raw_files)}" / "processed"
        if not processed_dir.is_dir():
            check_raw_files(raw_files)
        return load_or_rebuild(processed_dir, lambda: CachedPlanetoid(
            self.name, raw_files[0].parent, processed_dir, split=self.planetoid_split))

    def prepare_data(self) -> None:
        self.dataset()  # download (if asked) and process once, before the ranks read it

    def load_graph(self) -> Data:
        return self.dataset()[0]
