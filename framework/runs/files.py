"""A run folder's JSON files: written atomically, read back without failing.

``summary.json`` (written by :class:`framework.callbacks.RunSummary`, its layout in that
module's docstring) is what tools read instead of parsing logs; ``compare`` writes its
``spec.json`` and ``results.json`` the same way.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

SUMMARY_FILE = "summary.json"
#: The version of summary.json's layout (its sections are described in framework.callbacks.run_summary).
SUMMARY_FORMAT = 1


def write_json_atomically(path: Path, content: dict) -> None:
    """Write ``content`` as JSON to ``path`` through a temporary file, fsync and rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(content, f, indent=1, allow_nan=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_summary(run_dir: Path) -> dict:
    """The ``summary.json`` of a run folder, or ``{}`` when it is missing or unreadable."""
    try:
        content = json.loads((Path(run_dir) / SUMMARY_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return content if isinstance(content, dict) else {}
