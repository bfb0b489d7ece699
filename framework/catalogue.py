"""The attention catalogue, rendered from the registry (``python -m framework blocks``).

The README's catalogue section is this module's :func:`markdown`; a test keeps the two
equal, and ``python tools/sync_readme.py`` rewrites the section after a registry change.
``python -m framework blocks [KIND] [PATTERN] [--markdown]`` prints it, narrowed to one kind
and/or to names matching a glob pattern (:func:`main`).
"""

from __future__ import annotations

import argparse
from fnmatch import fnmatchcase
from typing import Optional, Sequence

from .attention import KINDS, available, info
from .attention.cross import DISTRIBUTIONS, SCORES

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
    entries = [info(name) for name in available(kind) if pattern is None or fnmatchcase(name, pattern)]
    entries.sort(key=lambda e: (order.index(e.kind), e.name))
    shown = {"block": ", per residual block", "stage": ", per stage", None: ""}
    return [(e.name, e.kind.replace("_", " ") + shown[e.placement], e.category, e.source, e.paper) for e in entries]


def text(kind: Optional[str] = None, pattern: Optional[str] = None) -> str:
    """Aligned columns for the terminal; the whole catalogue ends with the score and distribution functions."""
    table = [("name", "kind", "category", "defined in", "paper"), *rows(kind, pattern)]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines = ["  ".join(f"{cell:<{w}}" for cell, w in zip(row[:4], widths)) + "  " + row[4] for row in table]
    lines.insert(1, "-" * len(lines[0]))
    if kind is None and pattern is None:
        lines += ["", "score functions (Attention(score=...)): " + ", ".join(SCORES),
                  "distribution functions (Attention(distribution=...)): " + ", ".join(DISTRIBUTIONS)]
    return "\n".join(lines)


def markdown(kind: Optional[str] = None, pattern: Optional[str] = None) -> str:
    """Markdown tables: blocks, then (for the whole catalogue) score functions and distribution functions."""
    lines = ["| name | kind | taxonomy category | defined in | paper |", "|---|---|---|---|---|"]
    lines += [f"| `{name}` | {shown} | {category} | `{source}` | {paper} |"
              for name, shown, category, source, paper in rows(kind, pattern)]
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
    parser = argparse.ArgumentParser(prog="python -m framework blocks",
                                     description="The attention catalogue, narrowed to one kind and/or a name pattern.")
    parser.add_argument("kind", nargs="?", help=f"one of: {', '.join(KINDS)} ('feature-map' too)")
    parser.add_argument("pattern", nargs="?", help="a glob over block names, e.g. 'multi*' (quote it)")
    parser.add_argument("--markdown", action="store_true", help="markdown tables, as in the README")
    options = parser.parse_args(args)
    kind, pattern = _kind_and_pattern(parser, options.kind, options.pattern)
    if not rows(kind, pattern):
        what = f"{kind.replace('_', ' ')} block" if kind else "block"
        print(f"no {what} matches {pattern!r}; `{parser.prog}{' ' + kind if kind else ''}` lists them")
    else:
        print(markdown(kind, pattern) if options.markdown else text(kind, pattern))


def _kind_and_pattern(parser: argparse.ArgumentParser, first: Optional[str],
                      second: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """(kind, pattern) from the positional arguments; an unknown kind exits with status 2."""
    kind = None if first is None else kind_of(first)
    if first is None or kind is not None:
        return kind, second
    if second is None and (WILDCARDS & set(first) or first in available()):
        return None, first
    hint = f" (a name pattern alone needs a wildcard, e.g. '{first}*')" if second is None else ""
    parser.exit(2, f"{parser.prog}: unknown kind {first!r}; the kinds are {', '.join(KINDS)}{hint}\n")
