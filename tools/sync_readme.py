"""Rewrite README.md's attention catalogue from the block registry.

    python tools/sync_readme.py          # rewrite the section in place
    python tools/sync_readme.py --check  # exit 1 if the README is out of date

tests/test_registry.py runs the check, so the README cannot drift from the registry.
"""

from __future__ import annotations

import sys
from pathlib import Path

from framework import catalogue

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"


def synced(text: str) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{catalogue.markdown()}\n{END}{tail}"


def main() -> int:
    text = README.read_text()
    new = synced(text)
    if "--check" in sys.argv[1:]:
        if new != text:
            print("README.md's catalogue is out of date: run `python tools/sync_readme.py`", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
