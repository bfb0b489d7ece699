"""Rewrite the attention catalogue's table (docs/catalogue.md, linked from the README) from the
block registry of this checkout.

    python -m tools.sync_readme          # rewrite the table in place
    python -m tools.sync_readme --check  # exit 1 if the page is out of date

Run it from the repository root: ``python -m`` puts the root first on the module path, so the
registry it reads is this checkout's ``framework``, not the one a shared virtual environment
installed from another checkout; it refuses to write when the two differ. tests/test_registry.py
calls :func:`stale` in its own process, so the page cannot drift from the registry.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from framework.commands import blocks as catalogue
from framework.runs import write_text_atomically

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "docs" / "catalogue.md"
START, END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"


def synced(text: str) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{catalogue.markdown()}\n{END}{tail}"


def stale(page: Path = CATALOGUE) -> bool:
    """Whether ``page``'s catalogue section differs from the registry's table."""
    text = page.read_text()
    return synced(text) != text


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    registry = Path(catalogue.__file__).resolve()
    if not registry.is_relative_to(ROOT):
        print(
            f"sync_readme: the registry imported is {registry}, not this checkout's ({ROOT}): "
            f"run `python -m tools.sync_readme` from {ROOT}",
            file=sys.stderr,
        )
        return 2
    if "--check" in argv:
        if stale():
            print(f"{CATALOGUE.relative_to(ROOT)} is out of date: run `python -m tools.sync_readme`", file=sys.stderr)
            return 1
        return 0
    write_text_atomically(CATALOGUE, synced(CATALOGUE.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
