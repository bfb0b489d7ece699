"""Errors the framework raises on purpose, and how the command line shows them.

A bad config key, a size that does not fit the data, a missing or corrupt file, a run that
diverged: the user needs one or two lines that say what is wrong, where (the config key or
the file) and what to do, not a traceback. Such errors are :class:`FrameworkError`, or a
``ValueError``/``TypeError``/``KeyError``/``FileNotFoundError`` raised by a check in the
framework's or a domain's own code, or a ``PermissionError`` or full-disk error naming its
file. :func:`explain` turns them into those lines; anything else is unexpected and keeps
its traceback, and so does every error when ``FRAMEWORK_TRACEBACK=1`` (or ``--traceback``).
"""

from __future__ import annotations

import errno
import os
import traceback
from pathlib import Path
from typing import Optional

TRACEBACK_ENV = "FRAMEWORK_TRACEBACK"
#: Code whose checks raise on purpose: an error raised here is a message for the user.
OWN_CODE = tuple(str(Path(__file__).resolve().parents[1] / folder) for folder in ("framework", "domains"))
#: Operating-system errors that are about the user's files, not about the program.
FILE_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.ENOENT, errno.EISDIR}


class FrameworkError(Exception):
    """An error the framework raises on purpose; the command line prints its message alone."""


class ConfigError(FrameworkError, ValueError):
    """A config value that cannot work (names the key and what was expected)."""


class CheckpointError(FrameworkError, ValueError):
    """A checkpoint that cannot be read, written or used (names the file)."""


class NonFiniteError(FrameworkError, FloatingPointError):
    """A loss or gradient that is NaN or infinite: training stops, nothing non-finite is saved."""


def traceback_requested(argv: Optional[list[str]] = None) -> bool:
    return os.environ.get(TRACEBACK_ENV, "") not in ("", "0") or "--traceback" in (argv or [])


def _raised_in_own_code(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(OWN_CODE)


def is_expected(error: BaseException) -> bool:
    """Whether ``error`` is a message for the user rather than a bug (see the module's docstring)."""
    if isinstance(error, FrameworkError):
        return True
    if isinstance(error, OSError) and error.errno in FILE_ERRNOS and error.filename:
        return True
    return isinstance(error, (ValueError, TypeError, KeyError, FileNotFoundError)) and _raised_in_own_code(error)


def explain(error: BaseException) -> str:
    """The one or two lines the command line prints for an expected error."""
    if isinstance(error, OSError) and error.filename and not isinstance(error, FrameworkError):
        what = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
                errno.EROFS: "the file system is read-only"}.get(error.errno, error.strerror)
        return f"error: {what}: {error.filename}"
    message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    return f"error: {message}\n(set {TRACEBACK_ENV}=1 or add --traceback to see where it was raised)"
