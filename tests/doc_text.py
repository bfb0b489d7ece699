"""What the documentation says, read as data: the pages (README.md, docs/*.md), their links and
headings' anchors, their code blocks, and the commands that they and the config headers show.

A command is a line (with its ``\\`` continuations) of a code block or of the comment that heads
a config file, or a code span of the prose, that starts with ``python -m framework``,
``attention-framework``, ``afw``, ``make`` or a launcher running ``-m framework`` (``srun``,
``torchrun``), after any ``$`` prompt and ``VAR=value`` assignments. tests/test_docs.py and
tests/test_doc_commands.py check them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
#: The pages: the README, the door, and the pages it links to.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The configs whose heading comment shows commands: the domains' experiments and data sets, the presets.
CONFIGS = sorted(
    [*ROOT.glob("domains/*/*.yaml"), *ROOT.glob("domains/*/datasets/*.yaml"), *ROOT.glob("configs/*/*.yaml")]
)

FENCE = re.compile(r"^\s*(```|~~~)(.*)$")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
#: A word that stands for what the reader writes: an optional ``[--option ...]``, a capital ``C`` or ``CONFIG``.
SKETCHED = re.compile(r"^\[-.*\]$|^[A-Z][A-Z_]*$")


@dataclass(frozen=True)
class Command:
    """One command as the text shows it: where (``file:line``), its words, and the config it is
    about (the heading config's own file, or the ``--config`` of the command before it in the
    same code block), which an elided ``...`` stands for."""

    where: str
    text: str
    words: tuple[str, ...]
    context: Optional[str]

    @property
    def program(self) -> str:
        return "make" if self.words[0] == "make" else "framework"

    @property
    def sketch(self) -> bool:
        """Whether the text names the command without its arguments, or only sketches them with
        placeholders (``--config C``, ``[--device cuda]``) or a comparison's config (a file a
        comparison writes): only the command's name can be checked then."""
        named = len(self.words) == 2 and not self.words[1].startswith("-") and self.words[1] != "blocks"
        return named or any(SKETCHED.match(word) or word.startswith("runs/compare/") for word in self.words[2:])

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def code_blocks(page: Path) -> Iterator[tuple[int, str, list[str]]]:
    """Each fenced code block of ``page``: the line number of its first line, its info string, its lines."""
    lines, block, info, start = page.read_text().splitlines(), None, "", 0
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if block is None and fence:
            block, info, start = [], fence.group(2).strip(), number + 1
        elif block is not None and fence:
            yield start, info, block
            block = None
        elif block is not None:
            block.append(line)


def prose(page: Path) -> str:
    """``page`` without its fenced code blocks (their lines left empty, so line numbers hold)."""
    out, inside = [], False
    for line in page.read_text().splitlines():
        fence = FENCE.match(line)
        out.append("" if inside or fence else line)
        if fence:
            inside = not inside
    return "\n".join(out)


def links(page: Path) -> Iterator[tuple[int, str]]:
    """Each link and image target of ``page``'s prose (not of code), with its line number."""
    text = prose(page)
    without_code = CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    for match in LINK.finditer(without_code):
        yield without_code.count("\n", 0, match.start()) + 1, match.group(1)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading (as mkdocs.yml's ``toc.slugify`` makes it too): the text without
    its markup, lower case, punctuation but ``-`` and ``_`` dropped, each space a ``-``."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of ``page``'s headings, numbered as GitHub numbers repeated ones (``x``, ``x-1`` ...)."""
    found: set[str] = set()
    for line in prose(page).splitlines():
        if match := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = slug(match.group(1))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def _commands_in(lines: list[tuple[int, str]], where: str, context: Optional[str]) -> Iterator[Command]:
    """The commands among numbered ``lines`` of one block, joined over ``\\`` continuations."""
    joined: list[tuple[int, str]] = []
    for number, line in lines:
        if joined and joined[-1][1].endswith("\\"):
            joined[-1] = (joined[-1][0], joined[-1][1][:-1] + " " + line.strip())
        else:
            joined.append((number, line.strip()))
    for number, line in joined:
        text = line.removeprefix("$ ").strip()
        try:
            words = shlex.split(text, comments=True)
        except ValueError:  # unbalanced quotes: not a command line
            continue
        words = words[: words.index("|")] if "|" in words else words
        while words and ASSIGNMENT.match(words[0]):
            words = words[1:]
        if words[:1] in (["srun"], ["torchrun"]) and "-m" in words:  # a launcher: the module it runs
            words = ["python", *words[words.index("-m") :]]
        if words[:3] == ["python", "-m", "framework"]:
            words = ["python -m framework", *words[3:]]
        elif words[:1] in (["attention-framework"], ["afw"]):
            words = ["python -m framework", *words[1:]]
        elif words[:1] != ["make"]:
            continue
        command = Command(f"{where}:{number}", text, tuple(words), context)
        yield command
        if "--config" in words:
            context = words[words.index("--config") + 1]


def page_commands(page: Path) -> Iterator[Command]:
    """The commands of ``page``'s code blocks (shell blocks and bare ones; not YAML or Python)."""
    for start, info, block in code_blocks(page):
        if info in ("", "bash", "sh", "shell", "console"):
            numbered = list(enumerate(block, start))
            yield from _commands_in(numbered, str(page.relative_to(ROOT)), None)


def inline_commands(page: Path) -> Iterator[Command]:
    """The commands of ``page``'s code spans in its prose (``python -m framework fit --config ...``)."""
    text = prose(page)
    for match in CODE_SPAN.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        yield from _commands_in([(line, " ".join(match.group(2).split()))], str(page.relative_to(ROOT)), None)


def header(config: Path) -> list[tuple[int, str]]:
    """The comment lines that head ``config``, without their ``#``, numbered."""
    lines = []
    for number, line in enumerate(config.read_text().splitlines(), 1):
        if not line.startswith("#") and line.strip():
            break
        lines.append((number, line.lstrip("#").strip()))
    return lines


def header_commands(config: Path) -> Iterator[Command]:
    """The commands of ``config``'s heading comment; an elided ``...`` stands for the config itself."""
    name = str(config.relative_to(ROOT))
    yield from _commands_in(header(config), name, name)


def every_command() -> list[Command]:
    """The commands of the pages' code blocks and code spans, and of the config headers."""
    pages = [c for page in PAGES for c in [*page_commands(page), *inline_commands(page)]]
    return [*pages, *(c for cfg in CONFIGS for c in header_commands(cfg))]


RUN_PATH = re.compile(r"(?<![\w/.$-])runs/(?:<[^>\n]*>|[^\s`'\"(),;:<>\]])*")


def run_paths(text: str) -> list[str]:
    """The paths under the runs folder that ``text`` names (``runs/<experiment>/<run>/config.yaml`` ...)."""
    return [match.group(0).rstrip(".") or match.group(0) for match in RUN_PATH.finditer(text)]
