"""Errors the framework raises on purpose, and how the command line shows them.

A bad config key, a size that does not fit the data, a missing or corrupt file, a run that
diverged: the user needs one or two lines that say what is wrong, where (the config key or
the file) and what to do, not a traceback. Such errors are :class:`FrameworkError`, or a
``ValueError``/``TypeError``/``KeyError``/``FileNotFoundError`` raised by a check in the
framework's or a domain's own code, Lightning's ``MisconfigurationException``, a
``PermissionError`` or a name too long naming its file, or a full disk (:data:`DISK_FULL`).
:func:`explain` turns them into those lines; anything else is unexpected and keeps its
traceback, and so does every error when ``FRAMEWORK_TRACEBACK=1`` (or ``--traceback``).
"""

from __future__ import annotations

import errno
import os
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Optional, TypeVar

from lightning.fabric.utilities.exceptions import MisconfigurationException

T = TypeVar("T")

TRACEBACK_ENV = "FRAMEWORK_TRACEBACK"
#: Code whose checks raise on purpose: an error raised here is a message for the user.
OWN_CODE = tuple(str(Path(__file__).resolve().parents[1] / folder) for folder in ("framework", "domains"))
#: Operating-system errors that say a disk is full (or a quota or file-size limit reached), by what
#: the command line says: never the program's fault, so a message even where no file is named.
DISK_FULL = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "the file is larger than the file system or a limit allows",
}
#: Operating-system errors that are about the user's files, not about the program.
FILE_ERRNOS = {
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ENOENT,
    errno.EISDIR,
    errno.ENOTDIR,
    errno.ENAMETOOLONG,
    *DISK_FULL,
}


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


def _is_message(error: BaseException) -> bool:
    if isinstance(error, (FrameworkError, MisconfigurationException)):  # ours, and Lightning's own config checks
        return True
    if isinstance(error, OSError) and (error.errno in DISK_FULL or (error.errno in FILE_ERRNOS and error.filename)):
        return True
    return isinstance(error, (ValueError, TypeError, KeyError, FileNotFoundError)) and _raised_in_own_code(error)


def user_error(error: BaseException) -> Optional[BaseException]:
    """The error in ``error``'s chain that is a message for the user (see the module's docstring),
    if any: a check of ours wrapped by the config parser while it built a class counts too."""
    seen = set()
    while error is not None and id(error) not in seen:
        if _is_message(error):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def explained(argv: list[str], action: Callable[[], T], cleanup: Callable[[], None] = lambda: None) -> T:
    """``action()``, where an error the framework explains (:func:`user_error`) prints as one or two
    lines and exits with status 1, after ``cleanup()``; other errors, and every error with
    ``--traceback`` in ``argv``, keep their traceback. The commands' common ending."""
    try:
        return action()
    except Exception as err:
        found = None if traceback_requested(argv) else user_error(err)
        cleanup()
        if found is None:
            raise
        print(explain(found), file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def explain(error: BaseException) -> str:
    """The one or two lines the command line prints for an expected error."""
    if isinstance(error, OSError) and not isinstance(error, FrameworkError):
        what = {**DISK_FULL, errno.EROFS: "the file system is read-only"}.get(error.errno, error.strerror)
        if error.filename:
            return f"error: {what}: {error.filename}"
        if error.errno in DISK_FULL:
            return f"error: {what} (while writing a file the system does not name)"
    message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    return f"error: {message}\n(set {TRACEBACK_ENV}=1 or add --traceback to see where it was raised)"


def parser_message(message: str, domain: Optional[Callable[[str], Optional[str]]] = None) -> str:
    """The gist of a config parser's error in one line: the config key it names (joined across
    nested parsers, ``model.attention``) and the most specific reason, such as a domain type's
    own message ("expected an int >= 1, got 0") or a block-name type's ("unknown sequence block
    'mhsaa'; did you mean: mhsa?"); a choice's reason lists the choices. ``domain(key)``, where
    it knows the key, says its domain in words: the reason is then "expected <domain>, got <value>"."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    key = ".".join(re.findall(r'Parser key "([^"]+)"', message))
    given = re.search(r"^\s*Given value: (.{1,60})$", message, flags=re.M)
    ours = re.findall(r"Not of type \w+: (.+)", message)
    choice = re.search(r"Expected a typing\.Literal\[(.*)\](?:\. Got value: (.*)$)?", message, flags=re.M)
    said = domain(key) if domain is not None and key else None
    if said is not None:
        got = re.search(r"Got value: (.+)$", message, flags=re.M) or given
        value = got.group(1).strip() if got else None
        if value and (nested := re.fullmatch(r"NestedArg\(key='[^']*', val='?(.*?)'?\)", value)):
            value = nested.group(1)
        if value is None and (got := re.search(r", got (.+)$", next(iter(ours), ""))):
            value = got.group(1).strip("'")
        reason = f"expected {said}" + (f", got {value!r}" if value is not None else "")
    elif ours:  # a domain's own reason ("expected ..., got ...") before another type's of the same union
        reason = next((line for line in ours if line.startswith("expected ")), ours[0]).strip()
    elif choice and (choice.group(2) or given):
        reason = f"expected one of {choice.group(1)}, got {(choice.group(2) or given.group(1)).strip()!r}"
    else:
        after = max((i for i, line in enumerate(lines) if line.startswith("Parser key")), default=-1) + 1
        details = [line.lstrip("- ") for line in lines[after:] if not line.startswith(STRUCTURE)]
        reason = details[0] if details else lines[0]
        if given and "Got value" not in reason:
            reason += f"; got {given.group(1)}"
    reason = re.sub(r"NestedArg\(key='([^']*)', val='?([^')]*)'?\)", r"\1=\2", reason)  # jsonargparse's own repr
    return f"{key}: {reason}" if key else reason


#: Lines of a config parser's error that describe its structure, not the problem.
STRUCTURE = (
    "Does not validate",
    "Subtypes:",
    "Errors:",
    "- Problem with given class_path",
    "Given value",
    "- Expected a <class 'NoneType'>",
)
