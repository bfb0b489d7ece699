"""The Planetoid citation graphs (Cora, CiteSeer, PubMed), read by torch_geometric's Planetoid."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

import numpy as np
from torch_geometric.data import Data, download_url
from torch_geometric.datasets import Planetoid

from framework.data import (
    DataError,
    DataNotFoundError,
    DataSet,
    Field,
    Format,
    Labels,
    Rows,
    cache_dir,
    content_key,
    dataset_dir,
    load_or_rebuild,
    unpickle,
)
from framework.errors import ConfigError

from .base import NodeClassificationData

NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
RAW_FILES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
SOURCE = f"{Planetoid.url} (or set data.download=true)"
FEATURES = Format("Planetoid node features (a scipy sparse matrix)")
LABELS = Format("Planetoid labels (one-hot rows)", labels=Labels())
#: The raw files' invariants beyond their types: every label row one-hot (one class per node: PyG
#: would read a row of zeros as class 0), the labels paired with the features row by row, a test
#: node per row of ``tx``, each named once (its range, after the ``allx`` nodes and below the
#: graph's node count, is set when the graph is read).
PLANETOID = DataSet(
    "Planetoid",
    {
        **dict.fromkeys(("x", "tx", "allx"), FEATURES),
        **dict.fromkeys(("y", "ty", "ally"), LABELS),
        "test.index": Format(
            "a Planetoid test index", (Field("test node"),), shape="a node id per line", key=("test node",)
        ),
    },
    paired=(("x", "y"), ("tx", "ty"), ("allx", "ally"), ("tx", "test.index")),
)


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
    """Read every raw file (``RAW_FILES`` order) and check it against the Planetoid format
    before PyG processes them (PyG's own errors do not say which file):

    * ``x``, ``tx``, ``allx``: scipy sparse matrices of node features, one column count, finite;
    * ``y``, ``ty``, ``ally``: 2-D arrays with one column per class;
    * ``graph``: a dict node -> neighbour nodes, every node an integer below the node count (its length);
    * ``test.index``: one node per line, after the ``allx`` nodes;

    and then against :data:`PLANETOID`: one-hot labels, rows paired, each test node once.
    """
    import scipy.sparse

    files = dict(zip(RAW_FILES, paths))
    raw = {part: unpickle(path, "a Planetoid raw file") for part, path in files.items() if part != "test.index"}
    rows: dict[str, Rows] = {}
    for part in ("x", "tx", "allx"):
        matrix = raw[part]
        if not scipy.sparse.issparse(matrix) or matrix.ndim != 2:
            raise DataError(
                f"{files[part]}: expected a scipy sparse matrix of node features, got {type(matrix).__name__}"
            )
        if matrix.shape[1] != raw["x"].shape[1] or not np.isfinite(matrix.data).all():
            raise DataError(
                f"{files[part]}: {matrix.shape[1]} feature columns (ind.*.x has {raw['x'].shape[1]}) "
                f"or values that are not finite"
            )
        rows[part] = Rows(files[part], count=matrix.shape[0])
    for part in ("y", "ty", "ally"):
        labels = raw[part]
        if not isinstance(labels, np.ndarray) or labels.ndim != 2 or labels.shape[1] != raw["y"].shape[1]:
            raise DataError(
                f"{files[part]}: expected a 2-D array of one-hot labels with {raw['y'].shape[1]} columns, "
                f"got {type(labels).__name__} {getattr(labels, 'shape', '')}"
            )
        rows[part] = PLANETOID.files[part].array(files[part], labels)
    graph, nodes = raw["graph"], len(raw["graph"]) if hasattr(raw["graph"], "__len__") else 0
    if not isinstance(graph, dict) or nodes < raw["allx"].shape[0] + raw["tx"].shape[0]:
        raise DataError(
            f"{files['graph']}: expected a dict of at least {raw['allx'].shape[0] + raw['tx'].shape[0]} "
            f"nodes (the allx and tx rows), each to a list of neighbours, got {type(graph).__name__} of {nodes}"
        )
    for node, neighbours in graph.items():
        if not isinstance(neighbours, (list, tuple)):
            raise DataError(
                f"{files['graph']}: node {node!r} maps to {type(neighbours).__name__}: expected a list of neighbours"
            )
        for other in (node, *neighbours):
            if not isinstance(other, (int, np.integer)) or not 0 <= other < nodes:
                raise DataError(
                    f"{files['graph']}: node {node!r} has the neighbour {other!r}, out of range: expected "
                    f"node ids, integers from 0 to {nodes - 1}"
                )
    index = PLANETOID.files["test.index"].bounded("test node", raw["allx"].shape[0], nodes - 1)
    rows["test.index"] = index.read(files["test.index"])
    PLANETOID.check(rows)


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

    def __init__(
        self,
        name: str = "Cora",
        root: Optional[str] = None,
        split: Literal["public", "full", "random"] = "public",
        download: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if name.lower() not in NAMES:
            raise ConfigError(f"data.name must be one of {', '.join(NAMES.values())}, got {name!r}")
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
        self.sources = dict.fromkeys(("train", "val", "test"), str(raw_files[0].parent))
        processed_dir = cache_dir("Planetoid") / f"{self.name}-{content_key(raw_files)}" / "processed"
        if not processed_dir.is_dir():
            check_raw_files(raw_files)
        return load_or_rebuild(
            processed_dir,
            lambda: CachedPlanetoid(self.name, raw_files[0].parent, processed_dir, split=self.planetoid_split),
        )

    def prepare_data(self) -> None:
        self.dataset()  # download (if asked) and process once, before the ranks read it

    def load_graph(self) -> Data:
        return self.dataset()[0]
