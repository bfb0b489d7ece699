"""Every command the documentation shows still works as written: those of the README's and
docs/*.md's code blocks and of every config's heading comment (tests/doc_text.py finds them).

Each runs in the cheapest form that still catches stale text: ``make`` targets must be the
Makefile's; ``blocks`` and ``--help`` run for real; the training commands, ``evaluate`` and
``parity`` are parsed by their own command line (``--print_config``, nothing built), so an
unknown key, a refused value, a wrong config path or a renamed command fails; ``compare`` runs
as ``--dry_run`` (its parser, then every cell through the fit parser; a search: its parser, then
its config's). A command the text only names or sketches (``parity --config C``) must name a
command. Every ``runs/...`` path in the pages and the headers is checked against the run folders the code makes
(framework/runs/folders.py, framework/commands/compare/comparison.py). The error message the
README quotes for a misspelt block is the one the parser prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import pytest

from framework.__main__ import COMMANDS
from framework.__main__ import main as framework_main
from framework.commands.compare import command as compare_command
from framework.commands.compare.comparison import Spec
from framework.commands.fit import FrameworkCLI
from framework.runs import folders
from tests.doc_text import CONFIGS, PAGES, ROOT, Command, every_command, run_paths

COMMANDS_SHOWN = every_command()
MAKE_TARGETS = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
#: The experiments the configs of domains/ name (``<domain>/<config>``), by experiment.
EXPERIMENTS = {folders._experiment_name([cfg]): cfg for cfg in ROOT.glob("domains/*/*.yaml")}
#: What the placeholders of a ``runs/...`` path stand for: a value of each, to check the path's shape with.
PLACEHOLDERS = {
    "experiment": "demo/demo",
    "domain": "demo",
    "config": "demo",
    "run": "2026-01-01_00-00-00_fit",
    "date": "2026-01-01",
    "time": "00-00-00",
    "subcommand": "fit",
    "job id": "42",
    "id": "ccnet42",
    "name": "demo_mhsa",
    "cell": "mhsa",
    "S": "0",
}
#: What a run folder holds, by the first name under it: the files a run writes (folders.RUN_FILES)
#: and predict's folder (callbacks/prediction_writer.py).
RUN_CONTENTS = {*folders.RUN_FILES, "predictions"}
#: compare's code, which names the files it writes into a comparison's folder.
COMPARE_SOURCE = "\n".join(path.read_text() for path in (ROOT / "framework/commands/compare").glob("*.py"))


#: The shapes of a run folder's name: stamped (folders.new_run_dir), or a launcher's job
#: (folders.launcher_job: ``slurm-<job>_<subcommand>``, ``torchrun-<id>_<subcommand>``); a test checks both.
RUN_NAMES = [
    re.compile(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_[a-z]+(-\d+)?$"),
    re.compile(r"(slurm|torchrun)-[^/]+_[a-z]+$"),
]


def concrete(path: str) -> tuple[str, bool]:
    """``path`` with its placeholders replaced by a value of each; whether it named the experiment
    by a placeholder. An unknown placeholder is an error."""
    unknown = [name for name in re.findall(r"<([^>]*)>", path) if name not in PLACEHOLDERS]
    assert not unknown, f"{path}: no placeholder <{unknown[0]}> is known (tests/test_doc_commands.py PLACEHOLDERS)"
    return re.sub(r"<([^>]*)>", lambda m: PLACEHOLDERS[m.group(1)], path), "<experiment>" in path


def layout_error(path: str, config: Optional[str] = None) -> Optional[str]:
    """What is wrong with ``runs/...`` ``path`` against the run folders the code makes, or None;
    ``config``: the config of the command that names it, whose experiment it must be."""
    text, any_experiment = concrete(path)
    parts = [part for part in text.split("/")[1:] if part]
    if "..." in parts or any(part.endswith("*") for part in parts):  # elided: what is written is checked
        parts = parts[: next(i for i, p in enumerate(parts) if p == "..." or p.endswith("*"))]
    if not parts:
        return None
    if parts[0] == "compare":
        inside = parts[2:]
        folder = Spec.run_dir(SimpleNamespace(folder=Path("F")), SimpleNamespace(name="CELL"), 7)
        shape = re.escape(str(folder)).replace("CELL", "[^/]+").replace("7", r"\d+")
        if inside[:1] == ["runs"] and not re.fullmatch(shape, "/".join(["F", *inside[:3]])):
            return f"{path}: compare's run folders are <comparison>/{folder.relative_to('F')} (comparison.Spec.run_dir)"
        if inside and inside[0] != "runs" and not re.search(rf"[\"']{re.escape(inside[0])}[\"']", COMPARE_SOURCE):
            return f"{path}: compare writes no {inside[0]!r} into its folder (framework/commands/compare/)"
        return None
    run = next((i for i, part in enumerate(parts) if any(shape.match(part) for shape in RUN_NAMES)), len(parts))
    experiment, inside = "/".join(parts[:run]), parts[run + 1 :]
    if not any_experiment:
        expected = folders._experiment_name([config]) if config and config.startswith("domains/") else None
        if expected and experiment != expected:
            return f"{path}: the runs of {config} are in runs/{expected}/, not runs/{experiment}/"
        if experiment not in EXPERIMENTS and run < len(parts):
            return (
                f"{path}: no config's run folders are runs/{experiment}/ (a domain's config runs in "
                "runs/<domain>/<config>/, framework/runs/folders.py)"
            )
    if inside and inside[0] not in RUN_CONTENTS:
        return f"{path}: a run folder holds {sorted(RUN_CONTENTS)}, not {inside[0]!r}"
    return None


def test_the_run_name_shapes_are_the_codes(tmp_path, monkeypatch):
    made = folders.new_run_dir("demo/demo", "predict", root=tmp_path)
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_NTASKS", "2")
    for name in (made.name, f"{folders.launcher_job()}_fit"):
        assert any(shape.match(name) for shape in RUN_NAMES), name
    assert layout_error("runs/demo/demo/<run>/config.yaml") is None
    assert "runs/graph/gat_cora/" in layout_error("runs/gat_cora/<run>/config.yaml", "domains/graph/gat_cora.yaml")
    assert "seed" in layout_error("runs/compare/<name>/runs/<cell>/<S>/")
    assert "writes no 'mhsa'" in layout_error("runs/compare/<name>/<cell>/seed<S>/")
    assert layout_error("runs/compare/<name>/study.db") is None


def shown_paths() -> list[tuple[str, str, Optional[str]]]:
    """Every ``runs/...`` path of the pages and the config headers: where, the path, its command's config."""
    found = []
    for command in COMMANDS_SHOWN:
        config = next((w for w in command.words if w.startswith("domains/")), command.context)
        found += [(command.where, path, config) for word in command.words for path in run_paths(word)]
    for page in [*PAGES, *CONFIGS]:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            config = str(page.relative_to(ROOT)) if page.suffix == ".yaml" else None
            found += [(f"{page.relative_to(ROOT)}:{number}", path, config) for path in run_paths(line)]
    return found


@pytest.mark.parametrize("where, path, config", shown_paths(), ids=lambda x: x if "/" in str(x) else None)
def test_a_run_path_the_text_names_is_where_runs_go(where, path, config):
    assert (error := layout_error(path, config)) is None, f"{where}: {error}"


def framework_args(command: Command) -> list[str]:
    """The command's arguments with what the text elides filled in: ``...`` is the config it is
    about, and a run's ``config.yaml`` is the config the run was made from."""
    args: list[str] = []
    for word in command.words[1:]:
        if word == "...":
            args += ["--config", source_config(command.context)]
        elif word.startswith("runs/") and word.endswith("/config.yaml"):
            args.append(source_config(word))
        else:
            args.append(word)
    return args


def source_config(path: Optional[str]) -> str:
    """The config a path stands for: a domain's config itself, or the one a run folder of it was made from."""
    assert path, "an elided command (`...`) needs a command with --config before it, or a config's header"
    if not path.startswith("runs/"):
        return path
    experiment = "/".join(concrete(path)[0].split("/")[1:-2])
    assert experiment in EXPERIMENTS, f"{path}: no config makes runs/{experiment}/"
    return str(EXPERIMENTS[experiment].relative_to(ROOT))


@pytest.fixture(autouse=True)
def one_line_errors(monkeypatch):
    """The parser's messages as a user reads them (conftest asks for tracebacks)."""
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)


def run(args: list[str]) -> tuple[object, str, str]:
    """``python -m framework <args>`` in this process: its exit status, its output and its errors."""
    out, err, code = io.StringIO(), io.StringIO(), 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            framework_main(args)
    except SystemExit as stop:
        code = stop.code
    return code, out.getvalue(), err.getvalue()


@pytest.mark.slow  # about 175 parses of the command line, a third of a second each on 2 cores
@pytest.mark.parametrize("command", COMMANDS_SHOWN, ids=str)
def test_a_command_the_text_shows_runs(command, monkeypatch, tmp_path):
    if command.program == "make":
        assert set(command.words[1:2]) <= MAKE_TARGETS, f"{command}: the Makefile has no target {command.words[1]!r}"
        return
    if command.sketch or len(command.words) == 1:  # the text names the command, or sketches its arguments
        assert set(command.words[1:2]) <= set(COMMANDS), f"{command}: python -m framework has no such command"
        return
    args = framework_args(command)
    assert args[0] in COMMANDS or args[0] in ("-h", "--help"), f"{command}: python -m framework has no {args[0]!r}"
    monkeypatch.setenv(folders.RUNS_ROOT_ENV, str(tmp_path))
    monkeypatch.chdir(ROOT)
    if args[0] == "blocks" or "--help" in args or "-h" in args:  # cheap: run for real
        code, out, err = run(args)
        assert code in (0, None) and out, f"{command}: exit status {code}\n{err[-2000:]}"
        return
    if args[0] == "compare" and "--search" in args:  # a search has no dry run: its parser, then its config's
        _, run_args = compare_command.parse(args[1:])
        args = ["fit", *run_args, "--print_config"]
        monkeypatch.setattr(FrameworkCLI, "fill_printed_config", False)
    elif args[0] == "compare":
        args = [*args, "--dry_run"]
    else:
        monkeypatch.setattr(FrameworkCLI, "fill_printed_config", False)  # the config as written, nothing built
        args = args if "--print_config" in args else [*args, "--print_config"]
    code, out, err = run(args)
    assert code in (0, None), f"{command}\nexit status {code}: {err.strip()[-2000:]}"


def test_the_readme_quotes_the_parsers_message_for_a_misspelt_block(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(FrameworkCLI, "fill_printed_config", False)
    code, _, err = run(["fit", "--config", "domains/demo/demo.yaml", "--model.attention=mhsaa", "--print_config"])
    message = next(line for line in err.splitlines() if line.startswith("error:"))
    assert code == 2 and message in (ROOT / "README.md").read_text(), f"the README should quote: {message}"
