"""Where real data sets live: ``$FRAMEWORK_DATA_DIR/<folder>`` (default ``./data``).

Every real loader reads its data set from that folder, in the data set's canonical layout
(``Planetoid/Cora/raw``, ``babi/tasks_1-20_v1-2/en``, ``CamVid/train`` ...); a config may
name the folder directly instead (``data.root``). Nothing is downloaded unless asked.
"""

from __future__ import annotations

import gzip
import os
import pickle
import warnings
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Union

from ..errors import FrameworkError

DATA_DIR_ENV = "FRAMEWORK_DATA_DIR"
CACHE_DIR_ENV = "FRAMEWORK_CACHE_DIR"


class DataNotFoundError(FrameworkError, FileNotFoundError):
    """A data set is not where the config says; the message says where to put it."""


def data_root() -> Path:
    """``$FRAMEWORK_DATA_DIR``, or ``./data``."""
    return Path(os.environ.get(DATA_DIR_ENV, "data"))


def cache_dir(name: str) -> Path:
    """A writable folder for files derived from a data set (processed graphs, features ...):
    ``$FRAMEWORK_CACHE_DIR/<name>`` (default ``~/.cache/attention-framework/<name>``), created
    on demand, so that the data folder itself may be read-only. Key entries in it by what they
    were made from with :func:`framework.data.content_key`."""
    root = Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "attention-framework")
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def dataset_dir(
    folder: str, *, root: Union[str, Path, None] = None, source: str, expect: Sequence[str] = (), key: str = "data.root"
) -> Path:
    """The folder of a data set, checked to exist and to hold ``expect`` (relative paths).

    Args:
        folder: the data set's folder under the data root, e.g. ``"CamVid"``.
        root: a folder given in the config, used as is instead of ``<data root>/<folder>``.
        source: where the data set can be obtained (a URL or a sentence).
        expect: files or folders that must be inside, e.g. ``("train", "trainannot")``.
        key: the config key that sets ``root``, named in the error message.
    """
    path = Path(root) if root is not None else data_root() / folder
    missing = [name for name in expect if not (path / name).exists()]
    if path.is_dir() and not missing:
        return path
    origin = f"given by {key}" if root is not None else f"${DATA_DIR_ENV}/{folder}, with {DATA_DIR_ENV}={data_root()}"
    what = f"is missing {', '.join(missing)}" if path.is_dir() else "does not exist"
    inside = f" with {', '.join(expect)} inside" if expect and not path.is_dir() else ""  # else named as missing
    raise DataNotFoundError(
        f"data set folder {path.resolve()} ({origin}) {what}. Get the data set from {source} and put it "
        f"there{inside}, or point {DATA_DIR_ENV} or {key} at a copy."
    )


class DataError(FrameworkError, ValueError):
    """A data file that cannot be read as its format says (cut short, binary bytes in a text file,
    not gzip ...); the message names the file."""


#: The errors of reading a file that :func:`reading` names it in.
READ_ERRORS = (UnicodeDecodeError, EOFError, pickle.UnpicklingError, gzip.BadGzipFile, zlib.error, ValueError, OSError)


@contextmanager
def reading(
    path: Union[str, Path], what: str = "", errors: tuple[type[BaseException], ...] = READ_ERRORS
) -> Iterator[None]:
    """Turn the errors of reading one data file into a :class:`DataError` that names it::

        with reading(path, "a bAbI task file"):
            lines = path.read_text(encoding="utf-8")

    Decoding, decompression and unpickling errors, a file cut short and a format error raised
    by the reader (``ValueError``) all become "could not read <path> (<what>): <reason>";
    ``errors`` widens or narrows that list (a library reading a damaged file may raise anything).
    """
    try:
        yield
    except DataError:
        raise
    except errors as err:
        if isinstance(err, FileNotFoundError):
            raise
        kind = f" ({what})" if what else ""
        reason = str(err).splitlines()[0].replace(f" '{path}'", "") if str(err) else type(err).__name__
        raise DataError(
            f"could not read {path}{kind}: {reason}; the file is damaged or not in the expected "
            "format (get a fresh copy of the data set)"
        ) from err


def not_empty(path: Union[str, Path], what: str) -> Path:
    """``path``, checked to hold at least one byte (a :class:`DataError` naming it otherwise)."""
    path = Path(path)
    if path.stat().st_size == 0:
        raise DataError(f"{path} ({what}) is empty: 0 bytes")
    return path


def unpickle(path: Union[str, Path], what: str) -> Any:
    """The object pickled in ``path`` (Python 2 pickles too: ``latin1``). A damaged pickle can make
    the unpickler raise anything; every error becomes a :class:`DataError` naming the file. Old
    pickles' module paths (``scipy.sparse.csr`` ...) do not warn."""
    with reading(not_empty(path, what), what, errors=(Exception,)), open(path, "rb") as file:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return pickle.load(file, encoding="latin1")
