"""The README is a door: its first screen holds the quickstart and a block in Python, then its
contents; every relative link and ``#anchor`` of README.md and docs/*.md resolves; every page of
docs/ is reachable from the README; its Python runs; and the documentation site builds
(``mkdocs build --strict``, mkdocs.yml). The commands the pages show: tests/test_doc_commands.py."""

from __future__ import annotations

import re
import subprocess
import sys
from urllib.parse import unquote, urlsplit

import pytest

from tests.doc_text import PAGES, ROOT, anchors, code_blocks, links, slug

README = ROOT / "README.md"
#: Pages a tool writes, by the tool: a link to one resolves once its tool exists (another branch
#: may bring the tool and its page together); from then on the page must be there.
TOOL_PAGES = {ROOT / "docs" / "atlas.md": ROOT / "tools" / "atlas.py"}
#: The README's first sections, in order, and the line by which the last of them must have begun.
FIRST_SECTIONS, FIRST_SCREEN = ["Quickstart", "A block in Python", "Contents"], 60


def resolve(page, target: str):
    """The file and anchor a relative link of ``page`` names (None for a link off the repository)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or target.startswith("mailto:"):
        return None
    path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    return path, parts.fragment


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    wrong = []
    for line, target in links(page):
        if (found := resolve(page, target)) is None:
            continue
        path, anchor = found
        if path in TOOL_PAGES and not path.exists() and not TOOL_PAGES[path].exists():
            continue
        if not path.exists():
            wrong.append(f"{page.name}:{line}: {target}: no file {path.relative_to(ROOT)}")
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            wrong.append(f"{page.name}:{line}: {target}: {path.name} has no heading whose anchor is #{anchor}")
    assert not wrong, "\n".join(wrong)


def test_every_page_of_docs_is_linked_from_the_readme():
    linked = {found[0] for _, target in links(README) if (found := resolve(README, target))}
    orphans = [page.name for page in PAGES[1:] if page not in linked]
    assert not orphans, f"docs/ pages the README does not link to: {orphans}"


def test_the_readme_opens_with_the_quickstart_a_block_in_python_and_its_contents():
    lines = README.read_text().splitlines()
    sections = [(number, line[3:]) for number, line in enumerate(lines, 1) if line.startswith("## ")]
    assert [title for _, title in sections[:3]] == FIRST_SECTIONS, sections[:3]
    assert sections[2][0] <= FIRST_SCREEN, f"the contents begin at line {sections[2][0]}, after the first screen"
    quickstart = next(block for start, _, block in code_blocks(README) if start > sections[0][0])
    assert [line.split("#")[0].strip() for line in quickstart] == ["make fit", "make test"]
    contents = "\n".join(lines[sections[2][0] : sections[3][0] - 1])
    listed = re.findall(r"\]\(#([^)]+)\)", contents)
    assert listed == [slug(title) for _, title in sections[3:]], "the contents list every later section, in order"


@pytest.mark.slow
def test_the_readmes_python_runs():
    for _, info, block in code_blocks(README):
        if info == "python":
            exec(compile("\n".join(block), "README.md", "exec"), {})


#: Builds the site strictly into argv[1]; with argv[2] == "pending", a link to a tool's page still
#: to come is said, not refused (mkdocs' validation of links not found lowered to info).
BUILD = """
import logging, sys
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
config = load_config("mkdocs.yml", site_dir=sys.argv[1], strict=True)
if sys.argv[2] == "pending":
    config.validation.links.not_found = logging.INFO
try:
    build(config)
except Abort as stop:
    sys.exit(str(stop))
"""


@pytest.mark.slow
def test_the_documentation_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocstrings", reason="the site needs the docs extras: pip install -e '.[docs]'")
    pending = any(not page.exists() and not tool.exists() for page, tool in TOOL_PAGES.items())
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(site), "pending" if pending else "all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (site / "index.html").is_file() and (site / "api" / "index.html").is_file()
