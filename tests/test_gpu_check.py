"""The GPU check (``make test-gpu``): its scheduler with stand-in sections (sleeps; caps, the
deadline, concurrency, the table), its declarations, and a dry run on the CPU end to end, so that
it cannot rot between the sessions that have a GPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import torch

from tools import gpu_bundle, gpu_check, gpu_sections
from tools.gpu_schedule import Job, schedule

ROOT = Path(__file__).resolve().parents[1]


def section(name: str, code: str, cap_s: float = 60.0, cores: int = 1) -> Job:
    """A stand-in section: ``code`` in Python, with ``emit`` and ``time`` imported."""
    prelude = "import os, sys, time\nfrom pathlib import Path\nfrom tools.gpu_schedule import emit\n"
    return Job(name, [sys.executable, "-c", prelude + code], cap_s, cores)


def run(jobs: list[Job], tmp_path: Path, budget_s: float = 60.0, cores: int = 4, **kwargs):
    start = time.monotonic()
    rows, timings = schedule(jobs, budget_s, cores, tmp_path / "logs", cwd=ROOT, **kwargs)
    return rows, {t.section: t for t in timings}, time.monotonic() - start


@pytest.mark.slow  # starts stand-in sections' processes
def test_sections_that_fit_the_cores_run_at_once_and_keep_their_order(tmp_path):
    jobs = [section(name, f"time.sleep(1.5)\nemit(('{name}', 'x', 'ok', '1'))") for name in ("a", "b", "c")]
    rows, timings, wall = run(jobs, tmp_path, cores=3)
    assert [row[0] for row in rows] == ["a", "b", "c"]
    assert all(t.end == "finished" and t.wall_s >= 1.5 for t in timings.values())
    assert wall < 3.0  # three 1.5 s sections at once, not one after another


@pytest.mark.slow  # starts stand-in sections' processes
def test_a_section_waits_for_its_cores(tmp_path):
    jobs = [section("wide", "time.sleep(1)", cores=2), section("narrow", "time.sleep(1)", cores=1)]
    _, timings, wall = run(jobs, tmp_path, cores=2)
    assert wall >= 2.0 and set(timings) == {"wide", "narrow"}


@pytest.mark.slow  # starts stand-in sections' processes
def test_a_section_wider_than_the_machine_runs_alone(tmp_path):
    rows, timings, _ = run([section("wide", "emit(('wide', 'x', 'ok', ''))", cores=64)], tmp_path, cores=2)
    assert rows == [("wide", "x", "ok", "")] and timings["wide"].end == "finished"


@pytest.mark.slow  # starts stand-in sections' processes
def test_a_section_past_its_cap_is_killed_with_its_children_and_keeps_its_rows(tmp_path):
    marker = tmp_path / "child_alive"
    grandchild = f"import time; time.sleep(3); open({str(marker)!r}, 'w')"
    code = (
        "emit(('slow', 'first', 'ok', '1 s'))\n"
        "import subprocess\n"  # a grandchild, as pytest-xdist's workers or compare's are
        f"subprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
        "time.sleep(60)"
    )
    rows, timings, wall = run(
        [section("slow", code, cap_s=1.0), section("quick", "emit(('quick', 'x', 'ok', ''))")], tmp_path
    )
    assert wall < 10
    assert rows[0] == ("slow", "first", "ok", "1 s")
    assert rows[1][:3] == ("slow", "slow", "timed out") and rows[1][3].startswith("timed out after 1 s")
    assert rows[2] == ("quick", "x", "ok", "")
    assert timings["slow"].end == "timed out"
    time.sleep(3.5)
    assert not marker.exists()  # the whole process group went


@pytest.mark.slow  # starts stand-in sections' processes
def test_the_deadline_cuts_the_running_section_and_does_not_start_the_next(tmp_path):
    jobs = [section("first", "time.sleep(30)", cap_s=100), section("second", "emit(('second', 'x', 'ok', ''))")]
    rows, timings, wall = run(jobs, tmp_path, budget_s=2.0, cores=1, min_start_s=0.5)
    assert wall < 10
    assert rows[0][:3] == ("first", "first", "timed out") and "after 2 s" in rows[0][3]
    assert rows[1][:3] == ("second", "second", "skipped") and rows[1][3].startswith("not started")
    assert timings["second"].end == "not started"


@pytest.mark.slow  # starts stand-in sections' processes
def test_a_section_that_fails_without_a_row_says_why(tmp_path):
    rows, timings, _ = run([section("broken", "print('gpu_check: no such thing'); sys.exit(3)")], tmp_path)
    assert rows == [("broken", "broken", "FAILED", "exit status 3: gpu_check: no such thing")]
    assert timings["broken"].end == "exit status 3"


@pytest.mark.slow  # starts stand-in sections' processes
def test_the_table_file_is_rewritten_as_rows_arrive(tmp_path):
    out = tmp_path / "table.md"
    code = (  # ends only once its first row is in the table file: a table written at the end alone times it out
        "emit(('early', 'row', 'ok', 'seen'))\n"
        f"out = Path({str(out)!r})\n"
        "while '| early | row | ok | seen |' not in (out.read_text() if out.exists() else ''):\n"
        "    time.sleep(0.05)\n"
    )
    rows, timings, _ = run([section("early", code, cap_s=20)], tmp_path, out=out)
    assert timings["early"].end == "finished"
    text = out.read_text()
    assert "| early | row | ok | seen |" in text and "| early |" in text.split("| section | wall s |")[1]
    assert text.strip().endswith("1 rows, 0 failed")


def test_each_section_is_declared_for_both_devices_within_the_quick_budget():
    budget = gpu_check.BUDGET_S[("cuda", True)]
    for name, declared in gpu_check.SECTIONS.items():
        for size in (declared.cuda, declared.cpu):
            assert 0 < size.cap_s <= gpu_check.BUDGET_S[("cpu", True)], name
        assert declared.cuda.cap_s < budget, name
    # every section but env starts at once on one GPU machine's 16 cores
    assert sum(d.cuda.cores for name, d in gpu_check.SECTIONS.items() if name != "env") <= 16


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--budget", "-5"], "argument --budget: expected a number above 0 (float), got '-5'"),
        (["--cores", "0"], "argument --cores: expected a number above 0 (int), got '0'"),
        (["--cores", "two"], "argument --cores: expected a number above 0 (int), got 'two'"),
        (["--configs", "domains/nope.yaml"], "expected a config domains/<domain>/<name>.yaml, got 'domains/nope.yaml'"),
        (["--sections", "benchmarks"], "argument --sections: invalid choice: 'benchmarks'"),
    ],
)
def test_a_bad_flag_is_one_line_naming_it(flags, said, capsys):
    with pytest.raises(SystemExit) as exit:
        gpu_check.parser().parse_args(flags)
    assert exit.value.code == 2 and said in capsys.readouterr().err.splitlines()[-1]


def test_a_section_process_is_this_module_with_its_threads(tmp_path):
    args = gpu_check.parser().parse_args(["--device", "cpu", "--sections", "suite", "ddp", "--quick"])
    suite, ddp = gpu_check.jobs(args)
    assert suite.command[1:] == ["-m", "tools.gpu_check", "--section", "suite", "--device", "cpu", "--quick"]
    assert suite.env["OMP_NUM_THREADS"] == "1" and ddp.cores == 2


#: What the GPU forms' commands print (the formats of tools/bench_attention.py, bench_probes.py and
#: bench_overhead.py on CUDA), keyed by a word of their command, the first that matches.
GPU_OUTPUT = {
    "bench_attention": (
        "Criss-cross core on NVIDIA H200, C=512, C'=64, forward + backward; allow_tf32 = False\n"
        "| B | H x W | dtype | impl | ms | peak MB | speed-up vs authors | memory / authors "
        "| max abs diff vs authors |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        "| 8 | 97x97 | bfloat16 | ours (Triton) | 1.80 | 400 | 1.82x | 0.56x | 3.1e-02 |\n"
        "| 8 | 97x97 | bfloat16 | authors' algorithm | 3.27 | 714 | 1.00x | 1.00x | 0.0e+00 |\n"
        "Targets (H100, bf16, B=8, 97x97): ours >= 2x the authors' algorithm: 1.82x\n"
    ),
    "bench_probes": (
        "1. Extra memory of capture(probes=64) on large maps, B = 1, forward without gradients, NVIDIA H200\n"
        "block         plain peak MB  probes peak MB  extra MB  full map MB\n"
        "non_local                 9              13         4         4096\n"
        "criss_cross             110             112         2          338\n"
    ),
    "--steps": "step ccnet eager: 20.50 ms (1.00x eager)\nstep ccnet compiled: 3.80 ms (5.39x eager)\n",
    "bench_overhead": (
        "| model | fit s/epoch | loop s/epoch | fit / loop |\n|---|---|---|---|\n| ccnet | 1.21 | 1.10 | 1.10x |\n"
    ),
}


def test_the_gpu_forms_read_their_commands_tables(monkeypatch):
    def canned(command, form):
        key = next(key for key in GPU_OUTPUT if key in " ".join(command))
        return subprocess.CompletedProcess(command, 0, GPU_OUTPUT[key], "")

    monkeypatch.setattr(gpu_sections, "run", canned)
    form = gpu_sections.Form("cuda", quick=True)
    assert list(gpu_sections.criss_cross(form)) == [
        (
            "criss-cross",
            "B=8 97x97 bfloat16",
            "ok",
            "1.80 ms, 1.82x vs authors, memory 0.56x of theirs, max diff 3.1e-02",
        ),
        ("criss-cross", "targets (B=8 97x97 bf16)", "ok", "ours >= 2x the authors' algorithm: 1.82x"),
    ]
    assert list(gpu_sections.probes(form)) == [
        ("probes", "non_local", "ok", "9 MB plain, 13 MB with probes, 4 MB extra"),
        ("probes", "criss_cross", "ok", "110 MB plain, 112 MB with probes, 2 MB extra"),
    ]
    assert list(gpu_sections.overhead(form)) == [
        ("overhead", "bench_overhead ccnet", "ok", "fit s/epoch: 1.21, loop s/epoch: 1.10, fit / loop: 1.10x"),
        ("overhead", "make fit step ccnet eager", "ok", "20.50 ms (1.00x eager)"),
        ("overhead", "make fit step ccnet compiled", "ok", "3.80 ms (5.39x eager)"),
    ]


def test_the_bundle_and_the_gpu_image_hold_everything_the_project_and_its_tests_need():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    tests = [text for text in project["optional-dependencies"]["dev"] if not text.startswith("ruff")]
    assert gpu_bundle.uncovered(project["dependencies"] + tests + ["pytest-xdist"]) == set()


SWEPT = "tests/test_configs.py::test_one_batch_of_fit_then_validate_and_predict_from_its_checkpoint"


@pytest.mark.parametrize(
    "line, found",
    [
        (f"[gw1] [  4%] PASSED {SWEPT}[cuda-domains/demo/demo.yaml] ", ("gw1", "PASSED", "domains/demo/demo.yaml")),
        (f"{SWEPT}[cpu-domains/demo/demo.yaml] PASSED [100%]", ("", "PASSED", "domains/demo/demo.yaml")),
        (
            f"{SWEPT}[cuda-domains/vision/ccnet_camvid.yaml] SKIPPED (no data)",
            ("", "SKIPPED", "domains/vision/ccnet_camvid.yaml"),
        ),
        ("PASSED tests/test_configs.py::test_parses[domains/demo/demo.yaml]", None),
        ("collected 4 items / 96 deselected", None),
    ],
)
def test_the_sweep_is_read_line_by_line_as_its_configs_pass(line, found):
    assert gpu_sections.sweep_result(line) == found


@pytest.mark.slow  # trains one batch of the demo in a process of its own
def test_a_dry_run_on_the_cpu_sweeps_a_config_and_ends_with_the_table(tmp_path):
    out = tmp_path / "gpu_check.md"
    done = subprocess.run(
        [sys.executable, "-m", "tools.gpu_check", "--device", "cpu", "--sections", "env", "configs", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| section | item | result | figure |" in done.stdout
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("| configs | domains")]
    assert re.fullmatch(r"\| configs \| domains/demo/demo\.yaml \| ok \| \d+\.\d s \|", row), row  # as it passed
    assert re.search(r"^\| configs \| \d+ \| 300 \| finished \|$", done.stdout, flags=re.M)
    assert "3 rows, 0 failed" in done.stdout and re.search(r"^total wall time \d+ s", done.stdout, flags=re.M)
    assert out.read_text().strip().endswith("3 rows, 0 failed")
    assert "===== configs" in out.with_suffix(".log").read_text()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: make test-gpu runs for real")
def test_without_a_gpu_it_says_so_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "tools.gpu_check", "--sections", "env"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 2 and done.stderr.strip() == (
        "gpu_check: no CUDA device on this machine (use --device cpu for a dry run)"
    )
