"""mkdocs hooks of the documentation site (mkdocs.yml): the README becomes its home page, and the
API reference page is written from :data:`REFERENCE`, one mkdocstrings section per module.

On GitHub the README links to ``docs/<page>.md`` and the pages to ``../README.md``; in the site
the README is ``index.md`` beside the pages, so those links are rewritten as the pages are read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
#: The modules of the API reference, in the order of the README's Architecture (public API first).
REFERENCE = {
    "The block library": [
        "framework.attention.registry",
        "framework.attention.base",
        "framework.attention.capture",
        "framework.attention.ablation",
        "framework.attention.probes",
    ],
    "Tasks and the LightningModule": ["framework.tasks", "framework.task_module"],
    "Data": ["framework.data.sizes", "framework.data.invariants"],
    "Layers and decoding": ["framework.layers", "framework.decoding"],
    "Evaluation": ["framework.evaluation.protocol"],
    "Values, errors and runs": [
        "framework.values",
        "framework.errors",
        "framework.runs.folders",
        "framework.checkpoint",
    ],
}


def reference() -> str:
    sections = [
        f"## {title}\n\n" + "\n\n".join(f"::: {module}" for module in modules) for title, modules in REFERENCE.items()
    ]
    return "# API reference\n\nDrawn from the docstrings of these modules.\n\n" + "\n\n".join(sections) + "\n"


def on_files(files: Files, config: Any) -> Files:
    readme = (ROOT / "README.md").read_text()
    files.append(File.generated(config, "index.md", content=readme))
    files.append(File.generated(config, "api.md", content=reference()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri == "index.md":
        return re.sub(r"\]\(docs/", "](", markdown)
    return re.sub(r"\]\(\.\./README\.md", "](index.md", markdown)
