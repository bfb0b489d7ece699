"""The GPU check: does the project run right, and fast, on this machine's GPUs? (``make test-gpu``)

    python -m tools.gpu_check                         # everything, on CUDA (about 10 minutes on one H100)
    python -m tools.gpu_check --sections configs ddp  # some sections
    python -m tools.gpu_check --device cpu --sections configs --configs domains/demo/demo.yaml   # a dry run on the CPU

Run it from the repository root (``make test-gpu``).

Sections, each ending as rows of one table (section, item, result, figure):

* ``env``: torch and CUDA versions, the device, bf16 support, the TF32 settings.
* ``suite``: the CUDA lane of the test suite (``pytest -k cuda``: every test that takes a
  ``device`` runs on the GPU) but the config sweep, with a few threads per process.
* ``configs``: the config sweep's CUDA lane (tests/test_configs.py ``-k cuda``): one batch of
  ``fit`` of every config (``domains/*/*.yaml``) with the GPU preset (bf16), pictures drawn from
  GPU tensors, then ``validate`` and ``predict`` from its checkpoint; one row per config with its
  seconds, real-data configs without their data skipped with the reason.
* ``benchmarks``: ``python -m tools.bench_overhead`` (fit against a hand-written loop, kernels per
  step, GPU busy share), the ``make fit`` step eager and under ``--compile=reduce-overhead``,
  and the criss-cross block against the CCNet authors' algorithm (``python -m tools.bench_vision blocks``).
* ``workflow``: with the configs' default logger (W&B, offline without a key): a short fit of
  the demo, ``evaluate`` on its checkpoint, and a 2-cell ``compare`` (mhsa against none).
* ``ddp``: a data-parallel fit of the demo on every GPU present (one process per GPU).

``--quick`` runs ``env``, ``suite`` and ``configs`` (about 4 minutes on one H100); the suite and
the sweep run in parallel processes when pytest-xdist is installed (``--workers``, 2 threads
each). Exits with status 1 when a row failed. Real data come from ``$FRAMEWORK_DATA_DIR``; on a
machine without a network, ``make gpu-bundle`` (``python -m tools.gpu_bundle``) beforehand.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional
from xml.etree import ElementTree

import torch

ROOT = Path(__file__).resolve().parents[1]
SWEEP = "tests/test_configs.py"
SECTIONS = ("env", "configs", "suite", "workflow", "ddp", "benchmarks")
QUICK = ("env", "suite", "configs")
Row = tuple[str, str, str, str]  # section, item, result (ok / FAILED / skipped ...), figure


#: With ``--out``, every command's output is kept beside the table (``<table>.log``).
LOG: Optional[Path] = None


def run(command: list[str], timeout: float, threads: int = 4) -> subprocess.CompletedProcess:
    """``command`` in the repository root (``python -m`` there imports this checkout's packages)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as late:
        done = subprocess.CompletedProcess(
            command, 124, _text(late.stdout), _text(late.stderr) + f"\ntimed out after {timeout} s"
        )
    if LOG is not None:
        with open(LOG, "a") as log:
            log.write(f"\n$ {' '.join(command)}\n(exit status {done.returncode})\n{done.stdout}\n{done.stderr}\n")
    return done


def _text(output) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else (output or "")


def env_rows(device: str) -> list[Row]:
    rows = [("env", "torch", "ok", torch.__version__)]
    if device != "cuda":
        return rows + [("env", "device", "ok", "cpu (dry run)")]
    properties = torch.cuda.get_device_properties(0)
    rows += [
        (
            "env",
            "device",
            "ok",
            f"{properties.name} x {torch.cuda.device_count()}, "
            f"{properties.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}",
        ),
        ("env", "bf16", "ok" if torch.cuda.is_bf16_supported() else "FAILED", str(torch.cuda.is_bf16_supported())),
        (
            "env",
            "tf32 (matmul, cudnn)",
            "ok",
            f"{torch.backends.cuda.matmul.allow_tf32}, {torch.backends.cudnn.allow_tf32}",
        ),
    ]
    return rows


def parallel(workers: int) -> list[str]:
    """pytest-xdist's flags for ``workers`` processes, where it is installed."""
    return ["-n", str(workers)] if workers > 1 and importlib.util.find_spec("xdist") else []


def suite_rows(device: str, workers: int) -> list[Row]:
    lane = "cuda" if device == "cuda" else "cpu"
    start = time.perf_counter()
    done = run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            lane,
            f"--ignore={SWEEP}",
            *parallel(workers),
        ],
        timeout=540,
        threads=2,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    failed = re.findall(r"^FAILED (\S+)", done.stdout, flags=re.M)
    rows = [
        (
            "suite",
            f"pytest -k {lane} --ignore={SWEEP}",
            "ok" if done.returncode == 0 else "FAILED",
            f"{summary} ({time.perf_counter() - start:.0f} s)",
        )
    ]
    return rows + [("suite", name, "FAILED", "") for name in failed]


def config_rows(device: str, configs: Optional[list[str]], workers: int) -> list[Row]:
    """The config sweep on ``device`` (``configs``: only these), one row per config: its seconds
    for one batch of fit, validate and predict, or why it was skipped or failed."""
    select = f"one_batch and {device}" + (f" and ({' or '.join(configs)})" if configs else "")
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "sweep.xml"
        done = run(
            [
                sys.executable,
                "-m",
                "pytest",
                SWEEP,
                "-q",
                "-p",
                "no:cacheprovider",
                "-k",
                select,
                f"--junitxml={report}",
                *parallel(workers),
            ],
            timeout=900,
            threads=2,
        )
        cases = list(ElementTree.parse(report).iter("testcase")) if report.is_file() else []
    if not cases:
        return [("configs", f"pytest {SWEEP} -k '{select}'", "FAILED", (done.stdout + done.stderr).strip()[-160:])]
    rows = []
    for case in cases:
        config = case.get("name").split("[", 1)[1].split("-", 1)[1].rstrip("]")
        outcome = next(iter(case.findall("failure") + case.findall("error") + case.findall("skipped")), None)
        message = "" if outcome is None else (outcome.get("message") or "").splitlines()[0][:160]
        if outcome is None:
            rows.append(("configs", config, "ok", f"{float(case.get('time')):.1f} s"))
        elif outcome.tag == "skipped":
            rows.append(("configs", config, "xfail" if "xfail" in (outcome.get("type") or "") else "skipped", message))
        else:
            rows.append(("configs", config, "FAILED", message))
    return rows


def benchmark_rows(device: str) -> list[Row]:
    rows = []
    overhead = run([sys.executable, "-m", "tools.bench_overhead", "--device", device], timeout=400)
    table = [line for line in overhead.stdout.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    rows += [
        (
            "benchmarks",
            f"bench_overhead {line.split('|')[1].strip()}",
            "ok" if overhead.returncode == 0 else "FAILED",
            " | ".join(cell.strip() for cell in line.strip("|").split("|")[2:]),
        )
        for line in table
    ]
    if overhead.returncode:
        rows.append(("benchmarks", "bench_overhead", "FAILED", overhead.stderr.strip().splitlines()[-1][:160]))
    steps = run(
        [sys.executable, "-m", "tools.bench_overhead", "--device", device, "--models", "ccnet", "--steps"], timeout=400
    )
    rows += [
        (
            "benchmarks",
            "make fit step " + line.split(":")[0].strip(),
            "ok" if steps.returncode == 0 else "FAILED",
            line.split(":", 1)[1].strip(),
        )
        for line in steps.stdout.splitlines()
        if line.startswith("step ")
    ]
    if device == "cuda":
        blocks = run([sys.executable, "-m", "tools.bench_vision", "blocks"], timeout=900)
        table = [line.strip() for line in blocks.stdout.splitlines() if line.startswith("|") and "---" not in line]
        rows += [
            ("benchmarks", "criss-cross block", "ok" if blocks.returncode == 0 else "FAILED", line)
            for line in table[1:]
        ]  # the first row is the table's header
    return rows


def workflow_rows(device: str) -> list[Row]:
    """A fit, ``evaluate`` on its checkpoint and a 2-cell ``compare``, with the default logger."""
    accelerator = "gpu" if device == "cuda" else "cpu"
    small = [
        "--data.train_size=512",
        "--data.val_size=128",
        "--data.test_size=128",
        "--trainer.max_epochs=2",
        f"--trainer.accelerator={accelerator}",
        "--trainer.enable_progress_bar=false",
    ]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        fitted = run(
            [
                sys.executable,
                "-m",
                "framework",
                "fit",
                "--config",
                "domains/demo/demo.yaml",
                *small,
                f"--run_dir={folder}/fit",
            ],
            timeout=300,
        )
        best = Path(folder) / "fit" / "checkpoints" / "best.ckpt"
        rows.append(
            (
                "workflow",
                "fit demo (W&B offline)",
                "ok" if fitted.returncode == 0 and best.is_file() else "FAILED",
                f"{time.perf_counter() - start:.0f} s" if fitted.returncode == 0 else _last_line(fitted),
            )
        )
        start = time.perf_counter()
        evaluated = run(
            [
                sys.executable,
                "-m",
                "framework",
                "evaluate",
                "--config",
                f"{folder}/fit/config.yaml",
                "--ckpt_path",
                str(best),
                f"--trainer.accelerator={accelerator}",
                "--examples=128",
            ],
            timeout=300,
        )
        table = next((line for line in evaluated.stdout.splitlines() if line.startswith("evaluation table:")), "")
        rows.append(
            (
                "workflow",
                "evaluate its checkpoint",
                "ok" if evaluated.returncode == 0 and table else "FAILED",
                f"{time.perf_counter() - start:.0f} s" if evaluated.returncode == 0 else _last_line(evaluated),
            )
        )
        start = time.perf_counter()
        compared = run(
            [
                sys.executable,
                "-m",
                "framework",
                "compare",
                "--config",
                "domains/demo/demo.yaml",
                "--grid",
                "model.attention=[mhsa,none]",
                "--seeds",
                "1",
                "--name",
                "gpu_check",
                *small,
            ],
            timeout=400,
        )
        rows.append(
            (
                "workflow",
                "compare mhsa, none (1 seed)",
                "ok" if compared.returncode == 0 else "FAILED",
                f"{time.perf_counter() - start:.0f} s" if compared.returncode == 0 else _last_line(compared),
            )
        )
    return rows


def _last_line(done: subprocess.CompletedProcess) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1][:160] if lines else f"exit status {done.returncode}"


def ddp_rows(device: str) -> list[Row]:
    devices = torch.cuda.device_count() if device == "cuda" else 2
    accelerator = "gpu" if device == "cuda" else "cpu"
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        done = run(
            [
                sys.executable,
                "-m",
                "framework",
                "fit",
                "--config",
                "domains/demo/demo.yaml",
                "--config",
                "configs/trainer/ddp.yaml",
                f"--trainer.accelerator={accelerator}",
                f"--trainer.devices={devices}",
                "--trainer.max_epochs=2",
                "--trainer.enable_progress_bar=false",
                f"--run_dir={folder}/run",
            ],
            timeout=300,
            threads=1,
        )
        seconds = time.perf_counter() - start
        ok = done.returncode == 0 and (Path(folder) / "run" / "checkpoints" / "last.ckpt").is_file()
        accuracy = re.search(r"val/acc\s+([\d.]+)", done.stdout)
    figure = f"{devices} processes, {seconds:.0f} s" + (f", val/acc {accuracy.group(1)}" if accuracy else "")
    return [
        (
            "ddp",
            f"demo on {devices} {accelerator} processes",
            "ok" if ok else "FAILED",
            figure if ok else done.stderr.strip().splitlines()[-1][:160],
        )
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.gpu_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--configs", nargs="+", default=None, help="configs of the configs section (default: all)")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--out", default=None, help="also write the table here, rewritten after every section")
    parser.add_argument(
        "--workers",
        type=int,
        default=max(1, min(8, (os.cpu_count() or 2) // 2)),
        help="test processes of the suite and the sweep (pytest-xdist; default: half the cores, 8 at most)",
    )
    args = parser.parse_args()
    if args.quick:
        args.sections = [section for section in args.sections if section in QUICK]
    if args.out:
        global LOG
        LOG = Path(args.out).with_suffix(".log")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: no CUDA device on this machine (use --device cpu for a dry run)", file=sys.stderr)
        return 2
    os.environ.setdefault("FRAMEWORK_RUNS_DIR", tempfile.mkdtemp(prefix="gpu_check_"))
    rows: list[Row] = []
    for section in args.sections:
        start = time.perf_counter()
        if section == "env":
            rows += env_rows(args.device)
        elif section == "suite":
            rows += suite_rows(args.device, args.workers)
        elif section == "configs":
            rows += config_rows(args.device, args.configs, args.workers)
        elif section == "benchmarks":
            rows += benchmark_rows(args.device)
        elif section == "workflow":
            rows += workflow_rows(args.device)
        else:
            rows += ddp_rows(args.device)
        print(f"gpu_check: {section} done in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        if args.out:  # the table so far, in case the machine's time runs out before the end
            Path(args.out).write_text(table(rows))
    print(table(rows))
    return 1 if any(row[2] == "FAILED" for row in rows) else 0


def table(rows: list[Row]) -> str:
    lines = ["", "| section | item | result | figure |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    failed = sum(row[2] == "FAILED" for row in rows)
    return "\n".join(lines + ["", f"{len(rows)} rows, {failed} failed"])


if __name__ == "__main__":
    raise SystemExit(main())
