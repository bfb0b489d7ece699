"""Line-oriented data files read strictly: every problem is named by file and line.

Every reader of a text format (TREC, bAbI, Multi30k, MovieLens, SASRec files, labelled corpora)
goes through :class:`TextFile`. It decodes the file with the format's declared encoding and
refuses what that encoding would silently garble: a UTF-16/UTF-32 byte-order mark, a NUL or
other control byte (binary data, or UTF-16 text without a mark), bytes the encoding cannot
decode, and a file with no lines at all. Its methods check a line's shape (a regular
expression or a field count), integer values and their range, and values against a known set,
raising :class:`~framework.data.DataError` as ``<file>:<line>: <what is wrong>``::

    text = TextFile(path, "a TREC label file", encoding="latin-1")
    for number, match in text.matches(LINE, "'COARSE:fine question'"):
        text.known(number, match["label"], LABELS, "label")
"""

from __future__ import annotations

import codecs
import difflib
import gzip
import re
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Optional, Union

import numpy as np

from .paths import DataError, reading

#: Byte-order marks of encodings a data file is never declared in (UTF-32's first: it starts like UTF-16's).
FOREIGN_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
#: Bytes no text file of a data set holds: NUL and the other control characters but tab, line
#: feed, vertical tab, form feed and carriage return.
BINARY = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")


def line_of(data: bytes, offset: int) -> int:
    """The 1-based line of byte ``offset`` in ``data``."""
    return data.count(b"\n", 0, offset) + 1


def decode(data: bytes, path: Union[str, Path], encoding: str) -> str:
    """The text of a file's bytes in ``encoding``, refusing what would decode to garbage.

    Raises:
        DataError: a UTF-16/32 byte-order mark (the whole file), a control byte or a byte
            sequence ``encoding`` cannot decode (naming the line).
    """
    for mark, name in FOREIGN_MARKS:
        if data.startswith(mark) and not encoding.lower().replace("-", "").startswith(name.lower().replace("-", "")):
            raise DataError(
                f"{path} is {name} text (it starts with a {name} byte-order mark), but the format is "
                f"{encoding}: save it as {encoding}"
            )
    if data.startswith(codecs.BOM_UTF8) and codecs.lookup(encoding).name == "utf-8":
        data = data[len(codecs.BOM_UTF8) :]
    binary = BINARY.search(data)
    if binary is not None:
        raise DataError(
            f"{path}:{line_of(data, binary.start())}: byte 0x{data[binary.start()]:02x} is a control "
            f"character: binary data (or UTF-16 text), not {encoding} text"
        )
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        raise DataError(
            f"{path}:{line_of(data, err.start)}: byte 0x{data[err.start]:02x} is not valid {encoding} text"
        ) from None


def one_of(value: str, known: Collection[str], limit: int = 8) -> str:
    """For a message: the known names closest to ``value`` when it resembles some, else the first
    ``limit`` of them."""
    close = difflib.get_close_matches(value, list(known), n=3)
    if close:
        return f"did you mean {', '.join(close)}? (one of {len(known)} known)"
    names = sorted(known)
    return f"expected one of {', '.join(names[:limit])}{' ...' if len(names) > limit else ''}"


def in_range(low: Optional[int], high: Optional[int]) -> str:
    """``low`` to ``high``, either bound open (None), for a message."""
    if low is not None and high is not None:
        return f"{low} to {high}"
    return f"at least {low}" if low is not None else f"at most {high}"


class TextFile:
    """A data file's lines, decoded strictly (:func:`decode`) and checked to be there.

    Args:
        path: the file.
        what: what it is, for messages (``"a TREC label file"``).
        encoding: the format's encoding.
        gzipped: gzip-compressed (default: the name ends in ``.gz``).
        lines: the lines, when they are in memory already (``path`` then only names them).

    Attributes:
        lines: the lines without their ends (``\\n`` or ``\\r\\n``); ``lines[i]`` is line i + 1.

    Raises:
        DataError: unreadable (gzip cut short, not gzip ...), not text in ``encoding``, or empty
            (no line with more than white space).
    """

    def __init__(
        self,
        path: Union[str, Path],
        what: str,
        encoding: str = "utf-8",
        gzipped: Optional[bool] = None,
        lines: Optional[Iterable[str]] = None,
    ) -> None:
        self.path, self.what = Path(path), what
        if lines is not None:  # already in memory (a test's, a generator's): checked but for the encoding
            self.lines = [line.rstrip("\r\n") for line in lines]
        else:
            with reading(self.path, what):
                data = self.path.read_bytes()
                if gzipped or (gzipped is None and self.path.suffix == ".gz"):
                    data = gzip.decompress(data)
            text = decode(data, self.path, encoding)
            self.lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
            if self.lines and not self.lines[-1]:
                self.lines.pop()  # the end of the last line
        if not any(line.strip() for line in self.lines):
            raise DataError(f"{self.path} ({what}) is empty: it holds no lines")

    def error(self, number: int, problem: str) -> DataError:
        """A :class:`DataError` ``<file>:<number>: <problem>``."""
        return DataError(f"{self.path}:{number}: {problem}")

    def numbered(self) -> Iterator[tuple[int, str]]:
        """``(line number, line)`` of every line that is not blank."""
        return ((number, line) for number, line in enumerate(self.lines, 1) if line.strip())

    def fields(self, separator: Optional[str], count: int, shape: str) -> Iterator[tuple[int, list[str]]]:
        """``(line number, fields)`` of every non-blank line, split at ``separator`` (None: runs of
        white space); a line of another number of fields than ``count`` is an error naming ``shape``."""
        for number, line in self.numbered():
            fields = line.split(separator)
            if len(fields) != count:
                raise self.error(number, f"expected {shape} ({count} fields), got {len(fields)}: {line[:80]!r}")
            yield number, fields

    def matches(self, pattern: re.Pattern, shape: str) -> Iterator[tuple[int, re.Match]]:
        """``(line number, match)`` of every non-blank line, which must match ``pattern`` whole."""
        for number, line in self.numbered():
            match = pattern.fullmatch(line)
            if match is None:
                raise self.error(number, f"expected {shape}, got {line[:80]!r}")
            yield number, match

    def integers(
        self, separator: Optional[str], columns: dict[str, tuple[Optional[int], Optional[int]]], shape: str
    ) -> np.ndarray:
        """The non-blank lines as a table of integers (lines, columns) int64, read by numpy at
        once; ``columns`` names each column with its ``(low, high)`` range (None: open). A line
        of another field count, a field that is no integer or one out of its range is an error
        naming the first such line (found line by line only when the fast read fails)."""
        numbered = list(self.numbered())
        names = list(columns)
        try:
            table = np.loadtxt([line for _, line in numbered], dtype=np.int64, delimiter=separator, ndmin=2)
        except ValueError:
            table = None
        if table is None or table.shape != (len(numbered), len(names)):
            for number, fields in self.fields(separator, len(names), shape):
                for name, value in zip(names, fields):
                    self.integer(number, value.strip(), name)
            raise self.error(numbered[0][0], f"expected {shape}")  # numpy and the line-by-line read disagree
        for column, (name, (low, high)) in enumerate(columns.items()):
            values = table[:, column]
            outside = np.flatnonzero(
                (values < (low if low is not None else values.min()))
                | (values > (high if high is not None else values.max()))
            )
            if len(outside):
                self.integer(numbered[outside[0]][0], str(values[outside[0]]), name, low, high)
        return table

    def integer(self, number: int, value: str, name: str, low: Optional[int] = None, high: Optional[int] = None) -> int:
        """``value`` as an integer in ``[low, high]`` (either bound may be open), else an error
        naming the line and the field ``name``."""
        try:
            result = int(value)
        except ValueError:
            raise self.error(number, f"{name} {value[:40]!r} is not an integer") from None
        if (low is not None and result < low) or (high is not None and result > high):
            raise self.error(number, f"{name} {result} is out of range: expected {in_range(low, high)}")
        return result

    def known(self, number: int, value: str, known: Collection[str], name: str, where: str = "") -> str:
        """``value``, which must be in ``known`` (``where`` says whose set it is, e.g.
        ``" in the training file x"``), else an error naming the line."""
        if value not in known:
            raise self.error(number, f"{name} {value!r} is unknown{where}; {one_of(value, known)}")
        return value
