"""One shape for every command's ``--help``, whichever parser reads its command line (argparse's
for ``compare`` and ``blocks``, jsonargparse's, a subclass of argparse's, for the others)::

    usage: python -m framework <command> [options]

    What the command does, in one paragraph.

    <the option groups>

    <notes, where the command has them>

    examples:
      python -m framework <command> ...

:func:`style` gives the keyword arguments of a parser that has this shape. Standard library only:
``blocks --help`` imports nothing more.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any

PROG = "python -m framework"
#: The width the description paragraph is wrapped to.
WIDTH = 100
#: The heading of the last section.
EXAMPLES = "examples:"
#: How an example that goes on from the one before starts.
ELLIPSIS = "..."


class Layout(argparse.HelpFormatter):
    """A formatter that prints the description and the epilog as :func:`style` wrote them (argparse
    would join the lines of the examples into one). Mixed in before a parser's own formatter
    (jsonargparse's shows each option's type and default)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "".join(indent + line for line in text.splitlines(keepends=True))


def style(
    command: str,
    description: str,
    examples: Sequence[str],
    notes: str = "",
    arguments: str = "",
    formatter: type[argparse.HelpFormatter] = Layout,
) -> dict[str, Any]:
    """The keyword arguments of ``command``'s parser (``prog``, ``usage``, ``description``,
    ``epilog``, ``formatter_class``) that give its help the shape above.

    Args:
        command: the command's word (``fit``, ``compare`` ...).
        description: what it does; wrapped into one paragraph.
        examples: command lines, each without the leading ``python -m framework <command>``
            (one that starts with ``...`` goes on from the one before; an empty one is the
            command alone); a line break in one continues it on an indented line.
        notes: paragraphs printed after the option groups, before the examples.
        arguments: its positional arguments in the usage line (``[KIND] [PATTERN]``).
        formatter: the parser's formatter class, with :class:`Layout` mixed in.
    """
    if not examples:
        raise ValueError(f"{command}: its help needs an example")
    if not issubclass(formatter, Layout):
        raise TypeError(f"{command}: the help formatter {formatter.__name__} must mix in help.Layout")
    prog = f"{PROG} {command}"
    lines: list[str] = []
    for example in examples:
        first, *rest = example.strip().splitlines() or [""]
        lines.append(f"  {first}" if first.startswith(ELLIPSIS) else f"  {prog} {first}".rstrip())
        lines += [f"      {line.strip()}" for line in rest]
    paragraphs = [textwrap.fill(" ".join(part.split()), WIDTH) for part in notes.split("\n\n") if part.strip()]
    return {
        "prog": prog,
        "usage": " ".join(filter(None, (prog, arguments, "[options]"))),
        "description": textwrap.fill(" ".join(description.split()), WIDTH),
        "epilog": "\n\n".join([*paragraphs, "\n".join([EXAMPLES, *lines])]),
        "formatter_class": formatter,
    }
