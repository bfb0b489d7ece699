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
* ``ddp``: a data-parallel fit of the demo on every GPU present (one process per GPU).

Exits with status 1 when a row failed. Real data come from ``$FRAMEWORK_DATA_DIR``.
"""

from __future__ import annotations

import argparse
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
SECTIONS = ("env", "suite", "configs", "benchmarks", "ddp")
Row = tuple[str, str, str, str]  # section, item, result (ok / FAILED / skipped ...), figure


def run(command: list[str], timeout: float, threads: int = 4) -> subprocess.CompletedProcess:
    """``command`` in the repository root (``python -m`` there imports this checkout's packages)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def env_rows(device: str) -> list[Row]:
    rows = [("env", "torch", "ok", torch.__version__)]
    if device != "cuda":
        return rows + [("env", "device", "ok", "cpu (dry run)")]
    properties = torch.cuda.get_device_properties(0)
    rows += [("env", "device", "ok", f"{properties.name} x {torch.cuda.device_count()}, "
                                      f"{properties.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}"),
             ("env", "bf16", "ok" if torch.cuda.is_bf16_supported() else "FAILED", str(torch.cuda.is_bf16_supported())),
             ("env", "tf32 (matmul, cudnn)", "ok",
              f"{torch.backends.cuda.matmul.allow_tf32}, {torch.backends.cudnn.allow_tf32}")]
    return rows


def suite_rows(device: str) -> list[Row]:
    lane = "cuda" if device == "cuda" else "cpu"
    start = time.perf_counter()
    done = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", lane, f"--ignore={SWEEP}"],
               timeout=540)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    failed = re.findall(r"^FAILED (\S+)", done.stdout, flags=re.M)
    rows = [("suite", f"pytest -k {lane} --ignore={SWEEP}", "ok" if done.returncode == 0 else "FAILED",
             f"{summary} ({time.perf_counter() - start:.0f} s)")]
    return rows + [("suite", name, "FAILED", "") for name in failed]


def config_rows(device: str, configs: Optional[list[str]]) -> list[Row]:
    """The config sweep on ``device`` (``configs``: only these), one row per config: its seconds
    for one batch of fit, validate and predict, or why it was skipped or failed."""
    select = f"one_batch and {device}" + (f" and ({' or '.join(configs)})" if configs else "")
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "sweep.xml"
        done = run([sys.executable, "-m", "pytest", SWEEP, "-q", "-p", "no:cacheprovider", "-k", select,
                    f"--junitxml={report}"], timeout=900)
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
    rows += [("benchmarks", f"bench_overhead {line.split('|')[1].strip()}", "ok" if overhead.returncode == 0 else "FAILED",
              " | ".join(cell.strip() for cell in line.strip("|").split("|")[2:])) for line in table]
    if overhead.returncode:
        rows.append(("benchmarks", "bench_overhead", "FAILED", overhead.stderr.strip().splitlines()[-1][:160]))
    steps = run([sys.executable, "-m", "tools.bench_overhead", "--device", device, "--models", "ccnet", "--steps"],
                timeout=400)
    rows += [("benchmarks", "make fit step " + line.split(":")[0].strip(), "ok" if steps.returncode == 0 else "FAILED",
              line.split(":", 1)[1].strip()) for line in steps.stdout.splitlines() if line.startswith("step ")]
    if device == "cuda":
        blocks = run([sys.executable, "-m", "tools.bench_vision", "blocks"], timeout=900)
        table = [line.strip() for line in blocks.stdout.splitlines() if line.startswith("|") and "---" not in line]
        rows += [("benchmarks", "criss-cross block", "ok" if blocks.returncode == 0 else "FAILED", line)
                 for line in table[1:]]  # the first row is the table's header
    return rows


def ddp_rows(device: str) -> list[Row]:
    devices = torch.cuda.device_count() if device == "cuda" else 2
    accelerator = "gpu" if device == "cuda" else "cpu"
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        done = run([sys.executable, "-m", "framework", "fit", "--config", "domains/demo/demo.yaml", "--config",
                    "configs/trainer/ddp.yaml", f"--trainer.accelerator={accelerator}", f"--trainer.devices={devices}",
                    "--trainer.max_epochs=2", "--trainer.enable_progress_bar=false", f"--run_dir={folder}/run"],
                   timeout=300, threads=1)
        seconds = time.perf_counter() - start
        ok = done.returncode == 0 and (Path(folder) / "run" / "checkpoints" / "last.ckpt").is_file()
        accuracy = re.search(r"val/acc\s+([\d.]+)", done.stdout)
    figure = f"{devices} processes, {seconds:.0f} s" + (f", val/acc {accuracy.group(1)}" if accuracy else "")
    return [("ddp", f"demo on {devices} {accelerator} processes", "ok" if ok else "FAILED",
             figure if ok else done.stderr.strip().splitlines()[-1][:160])]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gpu_check",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--configs", nargs="+", default=None, help="configs of the configs section (default: all)")
    args = parser.parse_args()
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
            rows += suite_rows(args.device)
        elif section == "configs":
            rows += config_rows(args.device, args.configs)
        elif section == "benchmarks":
            rows += benchmark_rows(args.device)
        else:
            rows += ddp_rows(args.device)
        print(f"gpu_check: {section} done in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print("\n| section | item | result | figure |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    failed = sum(row[2] == "FAILED" for row in rows)
    print(f"\n{len(rows)} rows, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
