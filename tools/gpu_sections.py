"""The GPU check's sections: each runs the project's own commands and benchmarks in its
process and yields the rows of the table (section, item, result, figure).

Every section takes a :class:`Form`: the device (``cuda``, or ``cpu`` for the dry run, which
runs each section's CPU form: small shapes, a few items), whether the check is ``--quick``, and
the processes and threads per process it may use. The commands they run write their output to
this process's stderr, which the scheduler keeps as the section's log.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from xml.etree import ElementTree

import torch

from tools.gpu_schedule import Row

ROOT = Path(__file__).resolve().parents[1]
SWEEP = "tests/test_configs.py"
DEMO = "domains/demo/demo.yaml"
#: The dry run's part of the suite: the CPU lane of files of fast tests that take a ``device``.
CPU_SUITE = ("tests/test_core.py", "tests/test_pictures.py")
#: The dry run's configs (on CUDA: all of them).
CPU_CONFIGS = (DEMO,)
#: The criss-cross cases (B, H = W) of a quick check on CUDA: CCNet's Cityscapes feature map.
QUICK_CASES = ((8, 97),)
#: The standard measures evaluate runs (graph_fidelity is for graph tasks alone).
STANDARD = ("eraser", "plausibility", "infidelity", "sensitivity")


@dataclass(frozen=True)
class Form:
    """Where and how big a section runs: ``workers`` processes of ``threads`` threads each."""

    device: str
    quick: bool
    workers: int = 1
    threads: int = 1
    configs: Optional[tuple[str, ...]] = None

    @property
    def accelerator(self) -> str:
        return "gpu" if self.device == "cuda" else "cpu"


class Command:
    """``command`` run in the repository root when iterated: its output lines (stdout and stderr
    together) as they come, each copied to this process's stderr, the section's log, so a killed
    section's log shows where it was; then :meth:`result`."""

    def __init__(self, command: list[str], form: Form) -> None:
        self.command, self.form, self.lines, self.returncode = command, form, [], None

    def __iter__(self) -> Iterator[str]:
        threads = str(self.form.threads)
        env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "PYTHONUNBUFFERED": "1"}
        print(f"\n$ {' '.join(self.command)}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        with subprocess.Popen(
            self.command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        ) as process:
            for line in process.stdout:
                sys.stderr.write(line)
                self.lines.append(line)
                yield line
        self.returncode = process.returncode
        print(f"(exit status {process.returncode}, {time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)

    def result(self) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(self.command, self.returncode, "".join(self.lines), "")


def run(command: list[str], form: Form) -> subprocess.CompletedProcess:
    """``command`` run to its end (:class:`Command`): its exit status and its output in ``stdout``."""
    running = Command(command, form)
    for _ in running:
        pass
    return running.result()


def python(*args: str) -> list[str]:
    return [sys.executable, *args]


def last_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stdout.strip().splitlines()
    return lines[-1][:160] if lines else f"exit status {done.returncode}"


def result(done: subprocess.CompletedProcess) -> str:
    return "ok" if done.returncode == 0 else "FAILED"


def timed(section: str, item: str, command: list[str], form: Form, done_if=lambda done: True) -> Row:
    """One row for one command: ok and its seconds, or FAILED and its last line."""
    start = time.perf_counter()
    done = run(command, form)
    ok = done.returncode == 0 and done_if(done)
    return (section, item, "ok" if ok else "FAILED", f"{time.perf_counter() - start:.0f} s" if ok else last_line(done))


def parallel(workers: int) -> list[str]:
    """pytest-xdist's flags for ``workers`` processes, where it is installed."""
    return ["-n", str(workers)] if workers > 1 and importlib.util.find_spec("xdist") else []


def markdown_rows(text: str, named: bool = False) -> list:
    """The body rows of the markdown table in ``text``: lists of cells, or with ``named`` dicts
    from the header's names to the cells."""
    lines = [line.strip() for line in text.splitlines() if line.startswith("|") and "---" not in line]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    return [dict(zip(rows[0], row)) if named else row for row in rows[1:]]


def env(form: Form) -> Iterator[Row]:
    yield ("env", "torch", "ok", torch.__version__)
    if form.device != "cuda":
        yield ("env", "device", "ok", f"cpu (dry run), {len(os.sched_getaffinity(0))} cores")
        return
    properties = torch.cuda.get_device_properties(0)
    yield (
        "env",
        "device",
        "ok",
        f"{properties.name} x {torch.cuda.device_count()}, {properties.total_memory / 2**30:.0f} GiB, "
        f"CUDA {torch.version.cuda}, {len(os.sched_getaffinity(0))} cores",
    )
    bf16 = torch.cuda.is_bf16_supported()
    yield ("env", "bf16", "ok" if bf16 else "FAILED", str(bf16))
    yield (
        "env",
        "tf32 (matmul, cudnn)",
        "ok",
        f"{torch.backends.cuda.matmul.allow_tf32}, {torch.backends.cudnn.allow_tf32}",
    )


def suite(form: Form) -> Iterator[Row]:
    """The CUDA lane of the suite but the config sweep (on the CPU: the CPU lane of a few files)."""
    lane = ["-k", "cuda", f"--ignore={SWEEP}"] if form.device == "cuda" else ["-k", "cpu", *CPU_SUITE]
    start = time.perf_counter()
    done = run(python("-m", "pytest", "-q", "-p", "no:cacheprovider", *lane, *parallel(form.workers)), form)
    summary = last_line(done)
    yield ("suite", f"pytest {' '.join(lane)}", result(done), f"{summary} ({time.perf_counter() - start:.0f} s)")
    for name in re.findall(r"^FAILED (\S+)", done.stdout, flags=re.M):
        yield ("suite", name, "FAILED", "")


#: Parts of a result line of ``pytest -v`` for one config of the sweep (the worker where pytest-xdist runs).
SWEEP_WORKER, SWEEP_STATUS = re.compile(r"^\[(gw\d+)\]"), re.compile(r"\b(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
SWEEP_CONFIG = re.compile(r"::test_one_batch\S*?\[\w+-(\S+?)\]")


def sweep_result(line: str) -> Optional[tuple[str, str, str]]:
    """(worker, status, config) of a ``pytest -v`` line of the sweep; None for other lines."""
    config, status = SWEEP_CONFIG.search(line), SWEEP_STATUS.search(line)
    if not (config and status):
        return None
    worker = SWEEP_WORKER.match(line)
    return (worker.group(1) if worker else "", status.group(1), config.group(1))


def configs(form: Form) -> Iterator[Row]:
    """One batch of fit, validate and predict of every config with the GPU preset, pictures drawn
    (tests/test_configs.py): a row per config as it passes, with the seconds since its worker's
    previous config (the first's include the worker's start-up); the others' rows, with their
    reasons, from the JUnit report at the end. A sweep killed at its cap keeps the rows so far."""
    chosen = form.configs or (None if form.device == "cuda" else CPU_CONFIGS)
    select = f"one_batch and {form.device}" + (f" and ({' or '.join(chosen)})" if chosen else "")
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "sweep.xml"
        sweep = Command(
            python("-m", "pytest", SWEEP, "-v", "-p", "no:cacheprovider", "-k", select, f"--junitxml={report}")
            + parallel(form.workers),
            form,
        )
        start = time.perf_counter()
        previous: dict[str, float] = {}  # worker -> when its last config ended
        passed = set()
        for line in sweep:
            found = sweep_result(line)
            if found and found[1] == "PASSED":
                worker, _, config = found
                now = time.perf_counter()
                passed.add(config)
                yield ("configs", config, "ok", f"{now - previous.get(worker, start):.1f} s")
                previous[worker] = now
        cases = list(ElementTree.parse(report).iter("testcase")) if report.is_file() else []
    if sweep.returncode not in (0, 1) or not cases:  # 1: some failed, said below
        yield ("configs", f"pytest {SWEEP} -k '{select}'", "FAILED", last_line(sweep.result()))
    for case in cases:
        config = case.get("name").split("[", 1)[1].split("-", 1)[1].rstrip("]")
        outcome = next(iter(case.findall("failure") + case.findall("error") + case.findall("skipped")), None)
        message = "" if outcome is None else (outcome.get("message") or "").splitlines()[0][:160]
        if outcome is None and config not in passed:
            yield ("configs", config, "ok", f"{float(case.get('time')):.1f} s")
        elif outcome is not None and outcome.tag == "skipped":
            yield ("configs", config, "xfail" if "xfail" in (outcome.get("type") or "") else "skipped", message)
        elif outcome is not None:
            yield ("configs", config, "FAILED", message)


def workflow(form: Form) -> Iterator[Row]:
    """With the demo's default logger (W&B, offline without a key): a short fit, ``evaluate`` of
    its checkpoint with the standard measures, a 2-cell ``compare`` on the warm workers and a
    2-trial ``--search``."""
    sizes = (512, 128, 2) if form.device == "cuda" else (256, 64, 1)  # examples to train, validate, test; epochs
    small = [
        f"--data.train_size={sizes[0]}",
        f"--data.val_size={sizes[1]}",
        f"--data.test_size={sizes[1]}",
        f"--trainer.max_epochs={sizes[2]}",
        f"--trainer.accelerator={form.accelerator}",
        "--trainer.enable_progress_bar=false",
    ]
    jobs = [] if form.device == "cuda" else ["--jobs", "1"]  # on CUDA: a worker per free GPU
    with tempfile.TemporaryDirectory() as folder:
        best = Path(folder) / "fit" / "checkpoints" / "best.ckpt"
        fit = python("-m", "framework", "fit", "--config", DEMO, *small, f"--run_dir={folder}/fit")
        yield timed("workflow", "fit demo (W&B offline)", fit, form, lambda done: best.is_file())
        evaluate = python(
            "-m",
            "framework",
            "evaluate",
            "--config",
            f"{folder}/fit/config.yaml",
            "--ckpt_path",
            str(best),
            f"--trainer.accelerator={form.accelerator}",
            f"--tests=[{', '.join(STANDARD)}]",
            "--examples=32" if form.device == "cpu" else "--examples=128",
        )
        yield timed("workflow", f"evaluate: {', '.join(STANDARD)}", evaluate, form, has_table)
    compare = python("-m", "framework", "compare", "--config", DEMO, "--seeds", "1", *jobs, *small)
    yield timed(
        "workflow",
        "compare mhsa, none (warm workers)",
        compare + ["--grid", "model.attention=[mhsa,none]", "--name", "gpu_check_grid"],
        form,
    )
    yield timed(
        "workflow",
        "compare --search 2 trials",
        compare
        + ["--search", "optimizer.init_args.lr=loguniform(1e-4,1e-2)", "--trials", "2", "--name", "gpu_check_search"],
        form,
    )


def has_table(done: subprocess.CompletedProcess) -> bool:
    """Whether ``evaluate`` printed its table."""
    return any(line.startswith("evaluation table:") for line in done.stdout.splitlines())


def parity(form: Form) -> Iterator[Row]:
    """``parity`` of the demo: every path of every block against eager, a row per block and path
    (in the dry run, eager and SDPA)."""
    paths = [] if form.device == "cuda" else ["--backends=[eager, sdpa]"]  # compiling on the CPU takes minutes
    done = run(python("-m", "framework", "parity", "--config", DEMO, "--device", form.device, *paths), form)
    lines = done.stdout.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("block ")), None)
    if done.returncode or header is None:
        yield ("parity", DEMO, "FAILED", last_line(done))
        return
    for line in lines[header + 1 :]:
        cells = line.split()
        if len(cells) >= 8:  # block class backend d_out d_grad ms TFLOP/s peak [note]
            block, _, backend, d_out, d_grad, ms = cells[:6]
            yield ("parity", f"{block} {backend}", "ok", f"max|d out| {d_out}, max|d grad| {d_grad}, {ms} ms")


def probes(form: Form) -> Iterator[Row]:
    """Probe rows on large maps (non-local at 128 x 256, criss-cross at 97 x 97): the extra
    memory of a capture with 64 probes (tools/bench_probes.py section 1)."""
    done = run(python("-m", "tools.bench_probes", "--cuda" if form.device == "cuda" else "--memory"), form)
    found = False
    for line in done.stdout.splitlines():
        cells = line.split()
        if cells and cells[0] in ("non_local", "criss_cross"):
            found = True
            figures = cells[1:] if form.device == "cuda" else cells[2:]  # the CPU table also names the map
            plain, probed, extra = figures[:3]
            yield ("probes", cells[0], result(done), f"{plain} MB plain, {probed} MB with probes, {extra} MB extra")
    if done.returncode or not found:
        yield ("probes", "bench_probes", "FAILED", last_line(done))


def overhead(form: Form) -> Iterator[Row]:
    """fit against a hand-written loop (tools/bench_overhead.py), and one step eager and compiled."""
    sizes = (
        ["--epochs", "2"] + (["--models", "ccnet"] if form.quick else [])
        if form.device == "cuda"
        else ["--models", "ccnet", "--epochs", "1", "--train-batches", "4", "--val-batches", "2"]
    )
    done = run(python("-m", "tools.bench_overhead", "--device", form.device, *sizes), form)
    for cells in markdown_rows(done.stdout, named=True):
        model = cells.pop("model", "?")
        yield ("overhead", f"bench_overhead {model}", result(done), ", ".join(f"{k}: {v}" for k, v in cells.items()))
    if done.returncode:
        yield ("overhead", "bench_overhead", "FAILED", last_line(done))
    if form.device != "cuda":
        return  # the compiled step is a GPU figure
    steps = run(python("-m", "tools.bench_overhead", "--device", "cuda", "--models", "ccnet", "--steps"), form)
    for line in steps.stdout.splitlines():
        if line.startswith("step "):
            yield (
                "overhead",
                "make fit " + line.split(":")[0].strip(),
                result(steps),
                line.split(":", 1)[1].strip(),
            )
    if steps.returncode:
        yield ("overhead", "bench_overhead --steps", "FAILED", last_line(steps))


def criss_cross(form: Form) -> Iterator[Row]:
    """The criss-cross block against the CCNet authors' algorithm (tools/ccnet_reference.py)
    through ``python -m tools.bench_vision blocks``: on CUDA the Triton core (``--quick``: at
    B = 8, 97 x 97 alone), on the CPU at 32 x 32."""
    if form.device == "cuda" and form.quick:  # CCNet's Cityscapes map alone: each case compiles the einsum twice
        command = python("-c", f"from tools.bench_attention import criss_cross_gpu_table as t; t({QUICK_CASES})")
    else:
        sides = [] if form.device == "cuda" else ["--sides", "32"]
        command = python("-m", "tools.bench_vision", "blocks", "--device", form.device, *sides)
    done = run(command, form)
    if form.device == "cuda":
        for cells in markdown_rows(done.stdout, named=True):
            if cells.get("impl") == "ours (Triton)":
                yield (
                    "criss-cross",
                    f"B={cells['B']} {cells['H x W']} {cells['dtype']}",
                    result(done),
                    f"{cells['ms']} ms, {cells['speed-up vs authors']} vs authors, memory "
                    f"{cells['memory / authors']} of theirs, max diff {cells['max abs diff vs authors']}",
                )
        for line in done.stdout.splitlines():
            if line.startswith("Targets"):
                yield ("criss-cross", "targets (B=8 97x97 bf16)", result(done), line.split(": ", 1)[1])
    else:
        for line in done.stdout.splitlines():
            cells = line.split()
            if len(cells) >= 6 and cells[0].isdigit() and cells[1] in ("criss_cross", "authors"):
                yield ("criss-cross", f"H=W={cells[0]} {cells[1]}", result(done), f"{cells[2]} ms, {cells[3]} MB")
            elif "max |ours - authors|" in line:
                yield ("criss-cross", f"H=W={cells[0]} max |ours - authors|", result(done), cells[-1])
    if done.returncode:
        yield ("criss-cross", "bench_vision blocks", "FAILED", last_line(done))


def ddp(form: Form) -> Iterator[Row]:
    """A data-parallel fit of the demo on every GPU present (two CPU processes in the dry run)."""
    devices = torch.cuda.device_count() if form.device == "cuda" else 2
    if devices < 2:
        yield ("ddp", "demo", "skipped", f"{devices} GPU on this machine: data parallelism needs 2 or more")
        return
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        done = run(
            python(
                "-m",
                "framework",
                "fit",
                "--config",
                DEMO,
                "--config",
                "configs/trainer/ddp.yaml",
                f"--trainer.accelerator={form.accelerator}",
                f"--trainer.devices={devices}",
                "--trainer.max_epochs=2",
                "--trainer.enable_progress_bar=false",
                f"--run_dir={folder}/run",
            ),
            form,
        )
        seconds = time.perf_counter() - start
        ok = done.returncode == 0 and (Path(folder) / "run" / "checkpoints" / "last.ckpt").is_file()
    accuracy = re.search(r"val/acc\s+([\d.]+)", done.stdout)
    figure = f"{devices} processes, {seconds:.0f} s" + (f", val/acc {accuracy.group(1)}" if accuracy else "")
    yield (
        "ddp",
        f"demo on {devices} {form.accelerator} processes",
        "ok" if ok else "FAILED",
        figure if ok else last_line(done),
    )
