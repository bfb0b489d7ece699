"""A data format's invariants, declared beside its reader, and the shared checks that enforce them.

A reader states what its format promises once, as data: a :class:`Format` per file (each field's
type and range, a key no two rows share, the indicator columns that hold an example's labels)
and, for a data set of several files, a :class:`DataSet` (references from a field of one file to
the key of another, files whose rows pair one to one). It hands what it read to them; every
violation is a :class:`~framework.data.DataError` naming ``file:line`` (a line of a text file) or
``file: row r`` (a row of an array), and for a duplicate the row it repeats::

    RATINGS = Format(
        "MovieLens ratings",
        (Field("user id", 1), Field("item id", 1), Field("rating", 1, 5), Field("timestamp", 0)),
        separator="\\t", shape="'user<TAB>item<TAB>rating<TAB>timestamp'", key=("user id", "item id"),
    )
    ratings = RATINGS.read(path)                               # every field's type and range, the key
    MOVIELENS.check({"u.data": ratings, "u.user": users})      # references and pairs between files

``tests/test_data_faults.py`` reads these declarations and damages a tiny copy of every real data
set in each way they forbid: a repeated key, a dangling reference, a label row without a label,
files of unpaired lengths.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Optional, Union

import numpy as np

from .lines import TextFile, in_range, one_of
from .paths import DataError


@dataclass(frozen=True)
class Field:
    """One field of a row: an integer in ``[low, high]`` (either bound None: open) or, with
    ``text``, a string, not empty unless ``optional``, one of ``known`` when given."""

    name: str
    low: Optional[int] = None
    high: Optional[int] = None
    text: bool = False
    known: Optional[Collection[str]] = None
    optional: bool = False


@dataclass(frozen=True)
class Labels:
    """Indicator columns (0 or 1) that say which classes an example has: each row holds from
    ``least`` to ``most`` ones (``most`` None: any number). ``Labels()`` are one-hot rows, one
    label per example; ``fields`` None: every column of the file."""

    fields: Optional[tuple[str, ...]] = None
    least: int = 1
    most: Optional[int] = 1


@dataclass
class Rows:
    """What a reader read from one file: named columns of one length (``count``, given when there
    are none), and the 1-based line of each row in its file (None: row i of an array)."""

    path: Path
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    lines: Optional[np.ndarray] = None
    count: Optional[int] = None

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.count is None:
            self.count = len(next(iter(self.columns.values()))) if self.columns else 0

    @classmethod
    def of_lines(cls, text: TextFile) -> Rows:
        """Every line of a text file, blank ones included, as one row each (a line-aligned file)."""
        return cls(text.path, {"line": np.array(text.lines, dtype=object)}, np.arange(1, len(text.lines) + 1))

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def where(self, row: int) -> str:
        """``file:line`` of a row, or ``file: row r`` of an array's."""
        return f"{self.path}:{int(self.lines[row])}" if self.lines is not None else f"{self.path}: row {row}"

    def unit(self, row: int) -> str:
        """``line 12`` or ``row 11``, for a message that names a second row of the same file."""
        return f"line {int(self.lines[row])}" if self.lines is not None else f"row {row}"

    def error(self, row: int, problem: str) -> DataError:
        return DataError(f"{self.where(row)}: {problem}")


@dataclass(frozen=True)
class Format:
    """The invariants of one file's rows.

    Args:
        what: what the file is, for messages (``"MovieLens ratings"``).
        fields: the fields of a row, in order.
        separator: between a line's fields (None: runs of white space).
        shape: a line as a message describes it (``"'user item'"``).
        encoding: the text files' encoding.
        rest: the last field takes the rest of the line, separators included (TREC's question).
        key: fields whose values no two rows share.
        numbered: the key's one field counts 1, 2, 3 ... in file order (MovieLens' users and films).
        labels: the indicator columns of the labels and how many ones a row holds.
    """

    what: str
    fields: tuple[Field, ...] = ()
    separator: Optional[str] = None
    shape: str = ""
    encoding: str = "utf-8"
    rest: bool = False
    key: tuple[str, ...] = ()
    numbered: bool = False
    labels: Optional[Labels] = None

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def bounded(self, name: str, low: Optional[int], high: Optional[int]) -> Format:
        """This format with the range of field ``name`` set to what other files fix (a node id is
        below the graph's node count)."""
        fields = tuple(dataclasses.replace(f, low=low, high=high) if f.name == name else f for f in self.fields)
        return dataclasses.replace(self, fields=fields)

    def read(self, path: Union[str, Path]) -> Rows:
        """Every non-blank line of a text file, split into the fields, each of its type and range,
        checked (:meth:`check`); integers as int64 columns, text as strings."""
        text = TextFile(path, self.what, self.encoding)
        lines = np.fromiter((number for number, _ in text.numbered()), np.int64)
        if all(not f.text for f in self.fields) and not self.rest:
            bounds = {f.name: (f.low, f.high) for f in self.fields}
            table = text.integers(self.separator, bounds, self.shape)
            return self.check(Rows(text.path, {name: table[:, i] for i, name in enumerate(bounds)}, lines))
        values: list[list[Union[int, str]]] = [[] for _ in self.fields]
        for number, line in text.numbered():
            parts = line.split(self.separator, len(self.fields) - 1 if self.rest else -1)
            if len(parts) != len(self.fields):
                raise text.error(
                    number, f"expected {self.shape} ({len(self.fields)} fields), got {len(parts)}: {line[:80]!r}"
                )
            for column, (spec, part) in zip(values, zip(self.fields, parts)):
                column.append(self._value(text, number, spec, part.strip()))
        columns = {
            f.name: np.array(column, dtype=object if f.text else np.int64) for f, column in zip(self.fields, values)
        }
        return self.check(Rows(text.path, columns, lines))

    @staticmethod
    def _value(text: TextFile, number: int, spec: Field, value: str) -> Union[int, str]:
        if not spec.text:
            return text.integer(number, value, spec.name, spec.low, spec.high)
        if not value and not spec.optional:
            raise text.error(number, f"the {spec.name} is empty")
        if spec.known is not None:
            text.known(number, value, spec.known, spec.name)
        return value

    def array(self, path: Union[str, Path], values: np.ndarray) -> Rows:
        """The rows of a 2-D array read otherwise (a pickle, an IDX file), a column per field (the
        fields' names, else ``column 0, 1 ...``), each in its field's range, checked (:meth:`check`)."""
        values = np.asarray(values)
        names = [f.name for f in self.fields] or [f"column {i}" for i in range(values.shape[1])]
        rows = Rows(path, {name: values[:, i] for i, name in enumerate(names)})
        for spec in (f for f in self.fields if f.low is not None or f.high is not None):
            low = spec.low if spec.low is not None else -np.inf
            high = spec.high if spec.high is not None else np.inf
            outside = np.flatnonzero((rows[spec.name] < low) | (rows[spec.name] > high))
            if len(outside):
                row = int(outside[0])
                raise rows.error(
                    row, f"{spec.name} {rows[spec.name][row]} is out of range: expected {in_range(spec.low, spec.high)}"
                )
        return self.check(rows)

    def check(self, rows: Rows) -> Rows:
        """The invariants of rows as a whole: the key repeats in no row (and counts up from 1 when
        ``numbered``), and the label columns hold as many ones as ``labels`` says. Returns ``rows``."""
        if self.key:
            self._check_key(rows)
        if self.labels is not None:
            self._check_labels(rows)
        return rows

    def _check_key(self, rows: Rows) -> None:
        if self.numbered:
            ids = rows[self.key[0]]
            wrong = np.flatnonzero(ids != np.arange(1, len(ids) + 1))
            if len(wrong):
                row, value = int(wrong[0]), int(ids[wrong[0]])
                again = f" repeats {rows.unit(value - 1)}," if 1 <= value <= row else ""  # rows before are 1 .. row
                raise rows.error(row, f"{self.key[0]} {value}{again} where {row + 1} is due: the ids count up from 1")
            return
        codes = np.stack([np.unique(rows[name], return_inverse=True)[1].ravel() for name in self.key], 1)
        _, first, group = np.unique(codes, axis=0, return_index=True, return_inverse=True)
        group = group.ravel()
        repeats = np.flatnonzero(first[group] != np.arange(len(group)))
        if len(repeats):
            row = int(repeats[0])
            values = ", ".join(f"{name} {rows[name][row]}" for name in self.key)
            raise rows.error(
                row,
                f"{values} repeats {rows.unit(int(first[group[row]]))}: {self.what} hold one row per "
                f"{' and '.join(self.key)}",
            )

    def _check_labels(self, rows: Rows) -> None:
        labels = self.labels
        names = labels.fields if labels.fields is not None else list(rows.columns)
        table = np.stack([rows[name] for name in names], 1)
        if not np.isin(table, (0, 1)).all():
            row = int(np.flatnonzero(~np.isin(table, (0, 1)).all(1))[0])
            raise rows.error(row, f"labels {table[row].tolist()}: expected indicators, 0 or 1")
        ones = table.sum(1)
        wrong = np.flatnonzero((ones < labels.least) | (ones > (labels.most if labels.most is not None else np.inf)))
        if len(wrong):
            row = int(wrong[0])
            expected = (
                f"exactly {labels.least} (one label per example)"
                if labels.most == labels.least == 1
                else f"{labels.least} to {labels.most if labels.most is not None else 'any number'}"
            )
            held = "no label (every indicator 0)" if ones[row] == 0 else f"{int(ones[row])} labels"
            raise rows.error(row, f"{held}: expected {expected} of the {len(names)} indicators set")


class Reference(NamedTuple):
    """Every value of ``field`` in the file ``source`` is a value of ``key`` in the file ``target``
    (files named as in :attr:`DataSet.files`): no dangling reference."""

    source: str
    field: str
    target: str
    key: str


@dataclass(frozen=True)
class DataSet:
    """The invariants between the files of a data set.

    Args:
        what: the data set, for messages.
        files: its files by name, each with its :class:`Format`.
        references: fields of one file that refer to the key of another.
        paired: pairs of files whose rows pair one to one (features and their labels, a text and
            its translation): the same number of rows.
    """

    what: str
    files: Mapping[str, Format]
    references: tuple[Reference, ...] = ()
    paired: tuple[tuple[str, str], ...] = ()

    def check(self, rows: Mapping[str, Rows]) -> None:
        """The references and pairs among the files in ``rows`` (by name; a reader may hand a part)."""
        for reference in self.references:
            if reference.source in rows and reference.target in rows:
                check_reference(rows[reference.source], reference.field, rows[reference.target], reference.key)
        for first, second in self.paired:
            if first in rows and second in rows:
                check_paired(rows[first], rows[second])


def check_reference(source: Rows, name: str, target: Rows, key: str) -> None:
    """Every value of ``source[name]`` is one of ``target[key]``; the first that is not is an error
    naming its row and the file it should be in."""
    known = np.unique(target[key])
    dangling = np.flatnonzero(~np.isin(source[name], known))
    if len(dangling):
        row, value = int(dangling[0]), source[name][dangling[0]]
        if known.dtype == object:
            expected = one_of(str(value), [str(k) for k in known])
        else:
            expected = f"expected one of its {len(known)}, {known.min()} to {known.max()}"
        raise source.error(row, f"{name} {value} is no {key} of {target.path} (a dangling reference); {expected}")


def check_paired(first: Rows, second: Rows) -> None:
    """Two files whose rows pair one to one have as many rows."""
    if len(first) != len(second):
        unit = "lines" if first.lines is not None else "rows"
        raise DataError(
            f"{second.path} has {len(second)} {unit} but {first.path} has {len(first)}: their {unit} pair "
            "one to one (the same number in each)"
        )
