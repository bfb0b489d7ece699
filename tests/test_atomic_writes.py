"""Nothing lost: every file the code writes goes through ``framework.runs.atomic_file`` (or its
``write_text_atomically`` / ``write_json_atomically``), so a kill, a full disk or a crash leaves the
previous complete file or the new one, never half of one; except the streams declared below, which
are written as they go by nature (logs, pipes, a predict's files).

The writes are found in the source, not listed: calls of ``write_text``, ``write_bytes``,
``savefig``, ``torch.save``, numpy's ``save``/``savetxt``/``savez``, a picture's ``save(<file>)``, and
``open`` with a mode that writes. A write lexically inside ``with atomic_file(...)`` is atomic.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from framework.runs import atomic_file, write_text_atomically
from tests.conftest import ROOT

#: Writes that are streams, not files replaced whole: (file, function) -> why.
STREAMS: dict[tuple[str, str], str] = {
    (
        "framework/runs/prediction_files.py",
        "rows",
    ): "predict's files, appended as batches come (a killed predict runs again)",
    ("framework/runs/prediction_files.py", "lines"): "predict's files, appended as batches come",
    ("framework/runs/prediction_files.py", "image"): "predict's files, one per example as batches come",
    ("framework/commands/compare/runner.py", "output_to"): "a run's log, appended line by line",
    ("framework/commands/compare/runner.py", "_reset_peak_memory"): "/proc/self/clear_refs, no file",
    ("framework/warm_process.py", "__init__"): "a pipe to the warm process",
    ("framework/warm_process.py", "start"): "a pipe to the warm process",
    ("framework/attention/backend_parity.py", "_native_stderr_dropped"): "os.devnull",
    ("framework/drawing.py", "serve"): "the drawing process's PNGs, handed over by its reply once written",
    ("tools/gpu_schedule.py", "__init__"): "a job's log, streamed as it runs",
    ("tools/bench_evaluate.py", "run"): "a fit's log, streamed as it runs",
    ("tools/bench_measures.py", "evaluate"): "evaluate's log, streamed as it runs",
    ("tools/bench_overhead.py", "epoch"): "the benchmark times torch.save itself",
}
WRITERS = {"write_text", "write_bytes", "savefig", "savetxt", "savez", "savez_compressed"}


def _writes_a_file(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in WRITERS:
        return True
    if name == "save":  # torch.save(obj, f), np.save(f, a), a picture's save(f): a method given a target
        return isinstance(func, ast.Attribute) and bool(call.args)
    if name in ("open", "fdopen"):
        at = 0 if isinstance(func, ast.Attribute) and name == "open" else 1  # path.open(mode), open(path, mode)
        modes = call.args[at : at + 1] + [k.value for k in call.keywords if k.arg == "mode"]
        return any(
            isinstance(m, ast.Constant) and isinstance(m.value, str) and set(m.value) & set("wax") for m in modes
        )
    return False


def _atomic(item: ast.withitem) -> bool:
    call = item.context_expr
    return isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", "")) == "atomic_file"


def unguarded_writes(path: Path) -> list[tuple[str, int, str]]:
    """(function, line, source) of each write in ``path`` outside ``with atomic_file(...)``."""
    tree, found = ast.parse(path.read_text()), []

    def visit(node: ast.AST, function: str, guarded: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.With) and any(_atomic(item) for item in node.items):
            guarded = True
        if isinstance(node, ast.Call) and not guarded and _writes_a_file(node):
            found.append((function, node.lineno, ast.unparse(node)[:80]))
        for child in ast.iter_child_nodes(node):
            visit(child, function, guarded)

    visit(tree, "<module>", False)
    return found


SOURCES = sorted(
    path.relative_to(ROOT).as_posix()
    for folder in ("framework", "domains", "tools")
    for path in (ROOT / folder).rglob("*.py")
)


def test_every_file_written_is_written_atomically_or_is_a_declared_stream():
    loose = [
        f"{source}:{line} in {function}: {code}"
        for source in SOURCES
        for function, line, code in unguarded_writes(ROOT / source)
        if (source, function) not in STREAMS
    ]
    assert not loose, "write through framework.runs.atomic_file, or declare a stream in STREAMS:\n" + "\n".join(loose)


def test_every_declared_stream_still_writes():
    """A stream entry whose function no longer writes goes (the declaration stays true)."""
    writing = {(s, f) for s in SOURCES for f, _, _ in unguarded_writes(ROOT / s)}
    assert sorted(set(STREAMS) - writing) == []


def test_the_scan_finds_the_writes_it_names(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(
        "def f(p, fig, x):\n"
        "    p.write_text('a')\n"
        "    fig.savefig(p)\n"
        "    torch.save(x, p)\n"
        "    open(p, 'w')\n"
        "    open(p)\n"
        "    spec.save()\n"
        "    with atomic_file(p) as file:\n"
        "        torch.save(x, file)\n"
    )
    assert [line for _, line, _ in unguarded_writes(source)] == [2, 3, 4, 5]


def test_a_write_killed_half_way_leaves_the_previous_file(tmp_path):
    path = tmp_path / "table.csv"
    write_text_atomically(path, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_file(path, "w") as file:
            file.write("new, half")
            raise RuntimeError("killed")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["table.csv"]
