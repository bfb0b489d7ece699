"""The floors hold: tests -> tools -> domains -> framework, each importing only downwards.

Read from the source (every ``import`` and ``from ... import`` statement, at any depth, lazy
ones inside functions included): the tools never import the tests (what both need, such as the
CCNet authors' algorithm, lives in tools/), the framework never imports a domain or a tool, nothing in
the framework imports the dispatcher (``framework/__main__.py``), domains never import each
other, and the block library (``framework/attention``) imports nothing else of the framework but the
drawing kit (``framework.pictures``, which imports nothing of the framework); the tasks import of
the evaluation its protocol alone (``framework.evaluation.protocol``, which imports nothing of the
framework).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in the file (relative ones resolved);
    ``text`` stands for the file's content."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text() if text is None else text, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(node.lineno, module)]
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def violations(folder: str, forbidden) -> list[str]:
    bad = []
    for path in sources(folder):
        for line, module in imported_modules(path):
            reason = forbidden(path, module)
            if reason:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({reason})")
    return bad


def test_the_tools_never_import_the_tests():
    def forbidden(path: Path, module: str):
        return "the tests sit above the tools" if module.split(".")[0] == "tests" else None

    assert violations("tools", forbidden) == []


def test_the_framework_imports_no_domain_no_tool_and_not_the_dispatcher():
    def forbidden(path: Path, module: str):
        top = module.split(".")[0]
        if top in ("domains", "tools", "tests"):
            return f"the framework is below {top}/"
        if module == "framework.__main__" and path.name != "__main__.py":
            return "the dispatcher sits on top: nothing below imports it"
        return None

    assert violations("framework", forbidden) == []


def test_domains_never_import_each_other_nor_tools():
    def forbidden(path: Path, module: str):
        parts = module.split(".")
        own = path.relative_to(ROOT / "domains").parts[0]
        if parts[0] == "tools":
            return "tools sit above the domains"
        if parts[0] == "domains" and len(parts) > 1 and parts[1] != own and path.name != "__init__.py":
            return f"domains/{own} may not import domains/{parts[1]}: move the shared piece into framework/"
        if module == "framework.__main__":
            return "the dispatcher sits on top"
        return None

    assert violations("domains", forbidden) == []


def test_the_block_library_imports_nothing_else_of_the_framework():
    def forbidden(path: Path, module: str):
        if module.startswith("framework.") and not module.startswith(("framework.attention", "framework.pictures")):
            return "the block library is the lowest floor: pure nn.Modules"
        return None

    def framework_imports(path: Path, allowed: tuple[str, ...] = ()):
        found = [m for _, m in imported_modules(path) if m.startswith("framework") and not m.startswith(allowed)]
        return f"it imports {found}" if found else None

    assert violations("framework/attention", forbidden) == []
    # the picture kit uses the drawing process's rasteriser; the drawing process imports nothing of the framework
    assert framework_imports(ROOT / "framework" / "pictures.py", ("framework.drawing",)) is None
    assert framework_imports(ROOT / "framework" / "drawing.py") is None


def test_the_tasks_see_of_the_evaluation_its_protocol_alone():
    """``framework.tasks`` implements the evaluation's protocol: of ``framework.evaluation`` it
    imports the protocol module only, and that module imports nothing of the framework (no circle,
    and importing a task loads none of the evaluation's tests)."""
    def forbidden(path: Path, module: str):
        if module.startswith("framework.evaluation") and not module.startswith("framework.evaluation.protocol"):
            return "the tasks import only framework.evaluation.protocol"
        return None

    def protocol_imports(path: Path, module: str):
        return "the protocol imports nothing of the framework" if module.split(".")[0] == "framework" else None

    assert violations("framework/tasks", forbidden) == []
    protocol = ROOT / "framework" / "evaluation" / "protocol.py"
    assert [module for _, module in imported_modules(protocol) if protocol_imports(protocol, module)] == []


@pytest.mark.parametrize("source, expected", [
    ("from ..cli import main\n", "framework.cli"),
    ("import domains.vision\n", "domains.vision"),
    ("def f():\n    from framework.__main__ import main\n", "framework.__main__"),
])
def test_the_reader_sees_relative_absolute_and_lazy_imports(source, expected):
    module = ROOT / "framework" / "compare" / "probe.py"
    assert expected in [name for _, name in imported_modules(module, source)]
