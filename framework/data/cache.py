"""Cache entries keyed by the content they were made from, and remade when they cannot be read.

A loader that derives files from a data set (PyG's ``processed/`` folder, extracted features ...)
keeps them in ``cache_dir(<name>) / <content_key(source files)>``: a changed source file gives a
new entry instead of silently reusing the stale one, and the same bytes in two folders share one
entry. :func:`load_or_rebuild` turns a cache file cut short (a crash or a full disk while it was
written) into one warning naming it and a rebuild, instead of an error on every later run, and
an entry whose making failed (a full disk) is removed, never left half made.
"""

from __future__ import annotations

import hashlib
import pickle
import shutil
import warnings
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar, Union

from ..errors import DISK_FULL

T = TypeVar("T")

# What torch.load raises on a truncated or overwritten file.
UNREADABLE = (RuntimeError, EOFError, pickle.UnpicklingError)


def content_key(paths: Iterable[Union[str, Path]]) -> str:
    """A 16-hex-digit key of the files' contents: each file's name, size and SHA-256, in name order.

    The folders holding the files do not count, so copies of a data set share a key, while any
    changed byte (or a renamed file) gives a new one. Hashing reads every file once: about
    10 ms per MB.
    """
    digest = hashlib.sha256()
    for path in sorted(map(Path, paths), key=lambda p: p.name):
        with path.open("rb") as file:
            content = hashlib.file_digest(file, "sha256").hexdigest()
        digest.update(f"{path.name}\0{path.stat().st_size}\0{content}\n".encode())
    return digest.hexdigest()[:16]


def load_or_rebuild(folder: Path, load: Callable[[], T]) -> T:
    """``load()``, which reads the cache ``folder`` (and writes it first when it is absent).

    When the folder was already there and reading it fails as a damaged file does, one warning
    names the file, the folder is deleted and ``load()`` runs again to remake it. Errors while
    making a fresh folder are raised as they are, after the folder is removed (:func:`_made`).
    """
    if not (folder.is_dir() and any(folder.iterdir())):
        return _made(folder, load)
    try:
        return load()
    except UNREADABLE as error:
        warnings.warn(
            f"cache file {_damaged(folder)} could not be read ({_reason(error)}); deleted {folder} "
            "and made it again from the source files",
            stacklevel=2,
        )
        shutil.rmtree(folder)
        return _made(folder, load)


def _made(folder: Path, load: Callable[[], T]) -> T:
    """``load()`` making the entry ``folder``. When it fails, nothing of the entry is left, so a
    full disk or a kill half way leaves no partial file; a full disk that names no file (a library's
    buffered write) is said naming the entry."""
    try:
        return load()
    except BaseException as error:
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(error, OSError) and error.errno in DISK_FULL and not error.filename:
            raise OSError(error.errno, error.strerror, str(folder)) from error
        raise


def _damaged(folder: Path) -> Path:
    """The first ``.pt`` file in ``folder`` that is not an intact zip archive (torch.save's format,
    whose CRCs catch a cut or altered file), or the folder itself when none is."""
    for path in sorted(folder.glob("*.pt")):
        try:
            with zipfile.ZipFile(path) as archive:
                if archive.testzip() is None:
                    continue
        except zipfile.BadZipFile:
            pass
        return path
    return folder


def _reason(error: BaseException) -> str:
    """The error's type and first sentence (torch's messages go on for a paragraph)."""
    message = str(error).split(". ")[0]
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
