"""A run folder's files, written atomically (:func:`atomic_file`), and its JSON files read back
without failing.

``summary.json`` (written by :class:`framework.callbacks.RunSummary`, its layout in that
module's docstring) is what tools read instead of parsing logs; ``compare`` writes its
``spec.json`` and ``results.json`` the same way, and checkpoints are written through
:func:`atomic_file` too (:class:`framework.checkpoint.AtomicCheckpointIO`).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

SUMMARY_FILE = "summary.json"
#: The version of summary.json's layout (its sections are described in framework.callbacks.run_summary).
SUMMARY_FORMAT = 1


#: The suffix of the temporary file :func:`atomic_file` writes; the owner of a run folder removes
#: those a killed writer left (:func:`framework.runs.lock`).
PARTIAL_SUFFIX = ".partial"


@contextmanager
def atomic_file(path: Path, mode: str = "wb", newline: Optional[str] = None) -> Iterator[Any]:
    """A file to write ``path``'s new content into: a temporary file beside it, fsynced and renamed
    over ``path`` when the block ends, so ``path`` is always its previous complete content or the
    new one. When writing fails (a full disk, a quota, a file-size limit), the temporary file is
    removed and the operating system's error is raised naming ``path``, even where the library
    that wrote replaced it by its own (torch's zip writer says "unexpected pos ...").
    ``newline`` is open()'s, for text modes (``""`` for the csv module)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}{PARTIAL_SUFFIX}")
    writer: Optional[RecordingWriter] = None
    try:
        # a new file ("x"), with the permissions open() gives
        with open(partial, mode.replace("w", "x"), newline=newline) as file:
            writer = RecordingWriter(file)
            yield writer
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
    except Exception as error:
        cause = writer.error if writer is not None and writer.error is not None else error
        if isinstance(cause, OSError) and cause.errno is not None:
            raise OSError(cause.errno, cause.strerror, str(path)) from error
        raise
    finally:
        partial.unlink(missing_ok=True)


class RecordingWriter:
    """A file that keeps the operating system's error of a failed write: a library writing through
    it may replace that error by its own."""

    def __init__(self, file: Any) -> None:
        self.file, self.error = file, None

    def write(self, data: Any) -> int:
        try:
            return self.file.write(data)
        except OSError as error:
            self.error = error
            raise

    def flush(self) -> None:
        try:
            self.file.flush()
        except OSError as error:
            self.error = error
            raise


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_file`: a file a later run reads, or that
    replaces a complete earlier one (a table, a config, a document), is never left half written."""
    with atomic_file(path, "w") as f:
        f.write(text)


def write_json_atomically(path: Path, content: dict) -> None:
    """Write ``content`` as JSON to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, "w") as f:
        json.dump(content, f, indent=1, allow_nan=True)


def read_summary(run_dir: Path) -> dict:
    """The ``summary.json`` of a run folder, or ``{}`` when it is missing or unreadable."""
    try:
        content = json.loads((Path(run_dir) / SUMMARY_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return content if isinstance(content, dict) else {}
