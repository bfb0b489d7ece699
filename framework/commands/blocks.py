"""The attention catalogue, rendered from the registry (``python -m framework blocks``).

The catalogue page's table (docs/catalogue.md) is this module's :func:`markdown`; a test keeps
the two equal, and ``python -m tools.sync_readme`` rewrites the table after a registry change.
``python -m framework blocks [KIND] [PATTERN] [--markdown] [--wide]`` prints it, narrowed to one
kind and/or to names matching a glob pattern (:func:`main`), its columns wrapped to the terminal's
width (100 columns when piped; ``--wide``: one line per block).
A block's aliases (timm's names) follow its name, and a pattern matches them too.
"""

from __future__ import annotations

import argparse
import shutil
import textwrap
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Optional

from ..attention import KINDS, available, info
from ..attention.cross import DISTRIBUTIONS, SCORES
from ..attention.registry import aliases
from .help import style

WILDCARDS = set("*?[")


def _first_line(obj: object) -> str:
    return (obj.__doc__ or "").strip().splitlines()[0] if obj.__doc__ else ""


def kind_of(word: str) -> Optional[str]:
    """The registry's kind that ``word`` names (``feature_map``, ``feature-map``, ``Feature map`` ...), or None."""
    kind = word.strip().lower().replace("-", "_").replace(" ", "_")
    return kind if kind in KINDS else None


def rows(kind: Optional[str] = None, pattern: Optional[str] = None) -> list[tuple[str, str, str, str, str]]:
    """(name, kind, taxonomy category, defined in, paper) of the registered blocks, by kind then
    name; only those of ``kind`` and whose name matches the glob ``pattern`` when these are given.
    A feature-map block's kind says its placement in a CNN (``feature map, per stage``)."""
    order = list(KINDS)
    entries = [info(name) for name in available(kind)]
    entries = [e for e in entries if pattern is None or any(fnmatchcase(n, pattern) for n in (e.name, *e.aliases))]
    entries.sort(key=lambda e: (order.index(e.kind), e.name))
    shown = {"block": ", per residual block", "stage": ", per stage", None: ""}
    return [(e.name, e.kind.replace("_", " ") + shown[e.placement], e.category, e.source, e.paper) for e in entries]


def _named(name: str) -> str:
    """A block's name with its aliases: ``non_local (nl)``."""
    known = info(name).aliases
    return f"{name} ({', '.join(known)})" if known else name


def text(kind: Optional[str] = None, pattern: Optional[str] = None, width: Optional[int] = None) -> str:
    """Aligned columns for the terminal, no line longer than ``width`` as far as the narrowest
    columns allow (None: one line per block). A table wider than ``width`` puts each block's paper
    on the lines below it and wraps the other cells but the name to fit. The whole catalogue ends
    with the score and distribution functions."""
    table = [
        ("name", "kind", "category", "defined in", "paper"),
        *((_named(name), *rest) for name, *rest in rows(kind, pattern)),
    ]
    natural = [max(len(row[i]) for row in table) for i in range(5)]
    one_line = width is None or sum(natural) + 2 * 4 <= width
    if one_line:
        lines = [line for row in table for line in _wrapped(row, natural)]
    else:
        widths = _fit(natural[:4], width)
        indent = " " * (widths[0] + 2)  # the paper under the kind
        lines = [
            line
            for row in table
            for line in _wrapped(row[:4], widths) + [indent + part for part in _wrap(row[4], width - len(indent))]
        ]
    lines.insert(1 if one_line else 2, "-" * max(map(len, lines)))
    if kind is None and pattern is None:
        lines.append("")
        for label, names in (
            ("score functions (Attention(score=...))", SCORES),
            ("distribution functions (Attention(distribution=...))", DISTRIBUTIONS),
        ):
            lines += textwrap.wrap(f"{label}: {', '.join(names)}", width or 10**9, subsequent_indent="  ")
    return "\n".join(lines)


#: The width of the table where the output is no terminal and ``COLUMNS`` is unset (a pipe, a log).
PIPED_WIDTH = 100
#: The narrowest a wrapped column gets; the name column never wraps.
MIN_COLUMN = 10


def _fit(widths: list[int], width: int) -> list[int]:
    """Column widths whose sum with two spaces between columns is at most ``width``: the
    widest wrappable column (all but the first) narrowed a character at a time, down to
    :data:`MIN_COLUMN`."""
    widths = list(widths)
    while sum(widths) + 2 * (len(widths) - 1) > width:
        widest = max(range(1, len(widths)), key=lambda i: widths[i])
        if widths[widest] <= MIN_COLUMN:
            break
        widths[widest] -= 1
    return widths


def _wrapped(row: Sequence[str], widths: list[int]) -> list[str]:
    """The lines of one table row, each cell but the name wrapped to its column (paths after a ``/``)."""
    cells = [[row[0]]] + [_wrap(cell, w) for cell, w in zip(row[1:], widths[1:])]
    height = max(map(len, cells))
    cells = [cell + [""] * (height - len(cell)) for cell in cells]
    return ["  ".join(f"{cell[k]:<{w}}" for cell, w in zip(cells, widths)).rstrip() for k in range(height)]


def _wrap(cell: str, width: int) -> list[str]:
    """``cell`` in lines of at most ``width`` characters, broken at spaces or after a ``/``."""
    if len(cell) <= width:
        return [cell]
    return [line.replace("/ ", "/") for line in textwrap.wrap(cell.replace("/", "/ "), width)]


#: Examples in the command's help.
EXAMPLES = ("", "sequence", "'*co_attention'", "feature_map --markdown", "--wide | less -S")


def markdown(kind: Optional[str] = None, pattern: Optional[str] = None) -> str:
    """Markdown tables: blocks, then (for the whole catalogue) score functions and distribution functions."""
    lines = ["| name | kind | taxonomy category | defined in | paper |", "|---|---|---|---|---|"]
    lines += [
        f"| `{name}`{''.join(f' (`{a}`)' for a in info(name).aliases)} | {shown} | {category} | `{source}` | {paper} |"
        for name, shown, category, source, paper in rows(kind, pattern)
    ]
    if kind is None and pattern is None:
        lines += ["", "| score function | e = score(q, k) |", "|---|---|"]
        lines += [f"| `{name}` | {_first_line(cls)} |" for name, cls in SCORES.items()]
        lines += ["", "| distribution | a = g(e) |", "|---|---|"]
        lines += [f"| `{name}` | {_first_line(cls)} |" for name, cls in DISTRIBUTIONS.items()]
    return "\n".join(lines)


def main(args: Sequence[str]) -> None:
    """``python -m framework blocks [KIND] [PATTERN] [--markdown]``: prints the catalogue, narrowed.

    A lone argument is a kind when it names one, else a name pattern (``'*co_attention'``, or
    a block's name). An unknown kind is one line listing the kinds, and exit status 2.
    """
    parser = argparse.ArgumentParser(
        **style(
            "blocks",
            "The attention catalogue: every block with its kind, taxonomy category, the file that defines "
            "it and its paper, narrowed to one kind and/or a name pattern; the whole catalogue adds the "
            "score and distribution functions of the general model.",
            EXAMPLES,
            arguments="[KIND] [PATTERN]",
        )
    )
    parser.add_argument("kind", nargs="?", help=f"one of: {', '.join(KINDS)} ('feature-map' too)")
    parser.add_argument("pattern", nargs="?", help="a glob over block names, e.g. 'multi*' (quote it)")
    parser.add_argument("--markdown", action="store_true", help="markdown tables, as in docs/catalogue.md")
    parser.add_argument(
        "--wide",
        action="store_true",
        help=f"one line per block, however long (default when piped: {PIPED_WIDTH} columns)",
    )
    options = parser.parse_args(args)
    kind, pattern = _kind_and_pattern(parser, options.kind, options.pattern)
    if not rows(kind, pattern):
        what = f"{kind.replace('_', ' ')} block" if kind else "block"
        print(f"no {what} matches {pattern!r}; `{parser.prog}{' ' + kind if kind else ''}` lists them")
    else:
        width = None if options.wide else shutil.get_terminal_size((PIPED_WIDTH, 0)).columns
        print(markdown(kind, pattern) if options.markdown else text(kind, pattern, width))


def _kind_and_pattern(
    parser: argparse.ArgumentParser, first: Optional[str], second: Optional[str]
) -> tuple[Optional[str], Optional[str]]:
    """(kind, pattern) from the positional arguments; an unknown kind exits with status 2."""
    kind = None if first is None else kind_of(first)
    if first is None or kind is not None:
        return kind, second
    if second is None and (WILDCARDS & set(first) or first in available() or first in aliases()):
        return None, first
    hint = f" (a name pattern alone needs a wildcard, e.g. '{first}*')" if second is None else ""
    parser.exit(2, f"{parser.prog}: unknown kind {first!r}; the kinds are {', '.join(KINDS)}{hint}\n")
