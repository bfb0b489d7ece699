"""The floors hold: every module imports only from its own floor or the floors below, and no
import circle ties two modules together.

The floors are declared once, lowest first (:data:`FLOORS`), and read from the source: every
``import`` and ``from ... import`` statement, at any depth, lazy ones inside functions included.
Beside the floors, three rules the order alone cannot say: the framework imports no domain,
domains do not import each other, and the drawing process imports nothing of the framework
but its pipe, which imports the standard library alone (it runs without torch).
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The floors, lowest first: (what the floor is, the modules on it by dotted prefix). A module is on
#: the floor of its longest matching prefix; it may import from its own floor and those below.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundations, which import nothing of the framework",
        (
            "framework.errors",
            "framework.signals",
            "framework.quiet",
            "framework.values",
            "framework.warm_process",
            "framework.drawing",
            "framework.optim",
        ),
    ),
    ("the picture kit", ("framework.pictures",)),
    ("the block library: pure nn.Modules", ("framework.attention",)),
    (
        "services: data, shared layers, decoding, loggers, run folders, checkpoints, provenance",
        (
            "framework.data",
            "framework.layers",
            "framework.decoding",
            "framework.loggers",
            "framework.runs",
            "framework.checkpoint",
            "framework.provenance",
        ),
    ),
    ("the evaluation library: measures over a model and a task's hooks", ("framework.evaluation",)),
    ("tasks", ("framework.tasks",)),
    ("training: the one LightningModule and its callbacks", ("framework.task_module", "framework.callbacks")),
    ("domains: data, models and tasks", ("domains",)),
    (
        "the training command, which the other commands build on, and what all commands share",
        ("framework.commands.fit", "framework.commands.status_line", "framework.commands.help"),
    ),
    ("the other commands", ("framework.commands",)),
    ("the dispatcher and the package's door", ("framework.__main__", "framework")),
    ("tools: benchmarks and scripts", ("tools",)),
    ("tests", ("tests",)),
]


def imported_modules(path: Path, text: str | None = None) -> list[tuple[int, list[str]]]:
    """``(line, absolute module names)`` of every import in the file (relative ones resolved):
    ``[a]`` for ``import a``, ``[a.b, a]`` for ``from a import b`` (``a.b`` is a module or a
    name in ``a``); ``text`` stands for the file's content."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text() if text is None else text, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, [alias.name]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(node.lineno, [f"{module}.{alias.name}", module]) for alias in node.names]
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the repository's packages, by dotted name."""
    return {
        module_name(path): path
        for top in ("framework", "domains", "tools", "tests")
        for path in sorted((ROOT / top).rglob("*.py"))
    }


def floor_of(module: str) -> int:
    """The index in :data:`FLOORS` of the floor ``module`` is on (-1: not ours)."""
    best, floor = -1, -1
    for index, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, floor = len(prefix), index
    return floor


@cache
def edges() -> dict[str, dict[str, int]]:
    """module -> {the modules of ours it imports: the first line that does}; ``from a import b``
    counts as an import of the module ``a.b`` where there is one, else of ``a``."""
    known = modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        targets: dict[str, int] = {}
        for line, candidates in imported_modules(path):
            imported = candidates[0]
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.setdefault(imported, line)
        graph[name] = targets
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_every_module_is_on_a_floor():
    assert [name for name in modules() if floor_of(name) < 0] == []


def test_no_import_runs_up_a_floor():
    upward = []
    for name, targets in edges().items():
        for target, line in targets.items():
            if floor_of(target) > floor_of(name):
                upward.append(
                    f"{modules()[name].relative_to(ROOT)}:{line} imports {target}: "
                    f"'{FLOORS[floor_of(name)][0]}' is below '{FLOORS[floor_of(target)][0]}'"
                )
    assert upward == []


def test_no_import_circle():
    assert circles(edges()) == []


def test_the_framework_imports_no_domain_and_domains_not_each_other():
    bad = []
    for name, targets in edges().items():
        own = name.split(".")
        for target in targets:
            other = target.split(".")
            if own[0] == "framework" and other[0] == "domains":
                bad.append(f"{name} imports {target}: the framework never imports a domain")
            if (
                own[0] == other[0] == "domains"
                and len(own) > 1
                and len(other) > 1
                and own[1] != other[1]
                and name != "domains"
            ):
                bad.append(f"{name} imports {target}: move the shared piece into framework/")
    assert bad == []


def test_the_drawing_process_imports_nothing_of_the_framework():
    """``python -m framework.drawing`` runs beside training with numpy and matplotlib alone: of the
    framework it imports only its pipe, :mod:`framework.warm_process`, which imports the standard
    library alone."""
    pipe = "framework.warm_process"
    drawing = [
        names[0]
        for _, names in imported_modules(ROOT / "framework" / "drawing.py")
        if names[0].split(".")[0] == "framework"
    ]
    assert [name for name in drawing if name != pipe and not name.startswith(pipe + ".")] == []
    outside = [
        names[0]
        for _, names in imported_modules(ROOT / "framework" / "warm_process.py")
        if names[0].split(".")[0] not in sys.stdlib_module_names | {"__future__"}
    ]
    assert outside == []


def test_the_floors_are_checked_for_real():
    """The checks fail where they should: a circle, and an import up a floor."""
    assert circles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
    assert (
        floor_of("framework.attention.base") < floor_of("framework.tasks.task") < floor_of("framework.commands.fit.cli")
    )
    assert floor_of("framework.commands.fit.cli") < floor_of("framework.commands.compare.runner")
    assert floor_of("framework") == floor_of("framework.__main__") > floor_of("framework.commands.blocks")
    assert floor_of("domains.vision.task") < floor_of("framework.commands.fit")


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from ..cli import main\n", "framework.cli"),
        ("import domains.vision\n", "domains.vision"),
        ("def f():\n    from framework.__main__ import main\n", "framework.__main__"),
    ],
)
def test_the_reader_sees_relative_absolute_and_lazy_imports(source, expected):
    module = ROOT / "framework" / "commands" / "probe.py"
    assert expected in [name for _, names in imported_modules(module, source) for name in names]
