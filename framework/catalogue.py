"""The attention catalogue, rendered from the registry (``python -m framework blocks``).

The README's catalogue section is this module's :func:`markdown`; a test keeps the two
equal, and ``python tools/sync_readme.py`` rewrites the section after a registry change.
"""

from __future__ import annotations

from .attention import KINDS, available, info
from .attention.general import DISTRIBUTIONS, SCORES


def _first_line(obj: object) -> str:
    return (obj.__doc__ or "").strip().splitlines()[0] if obj.__doc__ else ""


def rows() -> list[tuple[str, str, str, str]]:
    """(name, kind, taxonomy category, paper) of every registered block, by kind then name."""
    order = list(KINDS)
    entries = [info(name) for name in available()]
    entries.sort(key=lambda e: (order.index(e.kind), e.name))
    return [(e.name, e.kind.replace("_", " "), e.category, e.paper) for e in entries]


def text() -> str:
    """Aligned columns for the terminal."""
    table = [("name", "kind", "category", "paper"), *rows()]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    lines = ["  ".join(f"{cell:<{w}}" for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in table]
    lines.insert(1, "-" * len(lines[0]))
    lines += ["", "score functions (Attention(score=...)): " + ", ".join(SCORES),
              "distribution functions (Attention(distribution=...)): " + ", ".join(DISTRIBUTIONS)]
    return "\n".join(lines)


def markdown() -> str:
    """Markdown tables: blocks, score functions, distribution functions."""
    lines = ["| name | kind | taxonomy category | paper |", "|---|---|---|---|"]
    lines += [f"| `{name}` | {kind} | {category} | {paper} |" for name, kind, category, paper in rows()]
    lines += ["", "| score function | e = score(q, k) |", "|---|---|"]
    lines += [f"| `{name}` | {_first_line(cls)} |" for name, cls in SCORES.items()]
    lines += ["", "| distribution | a = g(e) |", "|---|---|"]
    lines += [f"| `{name}` | {_first_line(cls)} |" for name, cls in DISTRIBUTIONS.items()]
    return "\n".join(lines)
