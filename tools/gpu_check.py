"""The GPU check: does the project run right, and fast enough, on this machine's GPU? (``make test-gpu``)

    python -m tools.gpu_check --quick --out gpu_check.md        # every section within 270 s (one H100 or H200)
    python -m tools.gpu_check --sections configs ddp            # some sections
    python -m tools.gpu_check --device cpu --quick              # the dry run on the CPU (within 540 s)

Run it from the repository root. Sections (:mod:`tools.gpu_sections`), each ending as rows of
one table (section, item, result, figure):

* ``env``: torch and CUDA versions, the device, bf16 support, the TF32 settings.
* ``suite``: the CUDA lane of the test suite (``pytest -k cuda``: every test that takes a
  ``device`` runs on the GPU) but the config sweep, on pytest-xdist workers where installed.
* ``configs``: one batch of ``fit`` of every config with the GPU preset (bf16) and the config's
  default logger, pictures drawn from GPU tensors, then ``validate`` and ``predict`` from its
  checkpoint (tests/test_configs.py ``-k cuda``); a row per config with its seconds.
* ``workflow``: a short fit of the demo with its default logger (W&B, offline without a key),
  ``evaluate`` of its checkpoint with the standard measures, a 2-cell ``compare`` on the warm
  workers and a 2-trial ``compare --search``.
* ``parity``: ``python -m framework parity`` of the demo, every path of every block.
* ``probes``: probe rows on large maps, non-local at 128 x 256 and criss-cross at 97 x 97
  (tools/bench_probes.py).
* ``overhead``: fit against a hand-written loop (tools/bench_overhead.py), and the ``make fit``
  step eager and under ``--compile=reduce-overhead``.
* ``criss-cross``: the criss-cross core against the CCNet authors' algorithm
  (tools/ccnet_reference.py, through ``python -m tools.bench_vision blocks``).
* ``ddp``: a data-parallel fit of the demo on every GPU present (skipped, with the reason, on one).

The sections run at once, each as a process of its own (:mod:`tools.gpu_schedule`), as many as
the cores allow: :data:`SECTIONS` declares each one's processes, threads and time cap. A section
past its cap is killed (its row: "timed out after N s") and the table still comes out; no section
starts once the ``--budget`` is nearly spent. ``--out`` rewrites the table file as rows arrive and
ends with every section's output beside it (``<out>.log``; the logs' folder is printed in any case).
Exits with status 1 when a row failed or timed out. On the CPU (``--device cpu``, the dry run)
each section runs its CPU form: small shapes, a few tests and configs.

Measured: on one H100 (2026-11-23, before the sections ran at once) the suite took 2 min 41 s
with 6 workers, the 50 configs 3.5 to 367 ms a training step, the DDP fit on one GPU 32 s, the
whole check about 10 minutes and ``--quick`` (env, suite and configs, one after another) 6.5
minutes. The dry run on a 2-core CPU under a load average of 9 to 11 (2026-11-28): 464 s in all
(env 7 s, suite 44, configs 66, workflow 335, overhead 40 until it failed, criss-cross 104,
parity 37, probes 83, DDP on 2 processes 85). Real data come from ``$FRAMEWORK_DATA_DIR``; on a
machine without a network, ``make gpu-bundle`` beforehand.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from framework.runs import write_text_atomically
from tools import gpu_sections
from tools.gpu_schedule import FAILING, Job, Row, emit, schedule, table
from tools.gpu_sections import Form


@dataclass(frozen=True)
class Size:
    """What a section may take on one device: seconds, processes, threads per process."""

    cap_s: float
    workers: int = 1
    threads: int = 1

    @property
    def cores(self) -> int:
        return self.workers * self.threads


@dataclass(frozen=True)
class Section:
    rows: Callable[[Form], Iterator[Row]]
    cuda: Size
    cpu: Size


#: Every section, in the order they start (the longest first after env) and are shown. On CUDA
#: they are sized for 16 cores; the CPU forms for a 2-core machine running two at once.
SECTIONS = {
    "env": Section(gpu_sections.env, cuda=Size(60), cpu=Size(60)),
    "suite": Section(gpu_sections.suite, cuda=Size(250, workers=5), cpu=Size(300)),
    "configs": Section(gpu_sections.configs, cuda=Size(240, workers=5), cpu=Size(300)),
    "workflow": Section(gpu_sections.workflow, cuda=Size(200), cpu=Size(480)),
    "overhead": Section(gpu_sections.overhead, cuda=Size(220), cpu=Size(300)),
    "criss-cross": Section(gpu_sections.criss_cross, cuda=Size(180), cpu=Size(300)),
    "parity": Section(gpu_sections.parity, cuda=Size(150), cpu=Size(300)),
    "probes": Section(gpu_sections.probes, cuda=Size(120), cpu=Size(300)),
    "ddp": Section(gpu_sections.ddp, cuda=Size(150), cpu=Size(300, workers=2)),
}
#: The deadline of the whole check by device, with ``--quick`` and without.
BUDGET_S = {("cuda", True): 270.0, ("cpu", True): 540.0, ("cuda", False): 900.0, ("cpu", False): 1800.0}


def size(name: str, device: str) -> Size:
    return getattr(SECTIONS[name], device)


def form(name: str, args: argparse.Namespace) -> Form:
    declared = size(name, args.device)
    configs = tuple(args.configs) if args.configs else None
    return Form(args.device, args.quick, declared.workers, declared.threads, configs)


def jobs(args: argparse.Namespace) -> list[Job]:
    """A process per section: this module again, with ``--section``."""
    jobs = []
    for name in args.sections:
        declared = size(name, args.device)
        command = [sys.executable, "-m", "tools.gpu_check", "--section", name, "--device", args.device]
        command += ["--quick"] * args.quick + (["--configs", *args.configs] if args.configs else [])
        threads = {"OMP_NUM_THREADS": str(declared.threads), "MKL_NUM_THREADS": str(declared.threads)}
        jobs.append(Job(name, command, declared.cap_s, declared.cores, {**threads, "PYTHONUNBUFFERED": "1"}))
    return jobs


def positive(kind: type) -> Callable[[str], float]:
    """An argparse type: a number of ``kind`` above 0."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a number above 0 ({kind.__name__}), got {text!r}")
        return value

    return parse


def config(text: str) -> str:
    """An argparse type: a config of the sweep, ``domains/<domain>/<name>.yaml``."""
    if not (gpu_sections.ROOT / text).is_file() or not Path(text).match("domains/*/*.yaml"):
        raise argparse.ArgumentTypeError(f"expected a config domains/<domain>/<name>.yaml, got {text!r}")
    return text


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.gpu_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    parser.add_argument(
        "--configs", nargs="+", type=config, default=None, help="configs of the configs section (default: all)"
    )
    parser.add_argument("--quick", action="store_true", help="the small forms, within the quick budget")
    parser.add_argument(
        "--budget",
        type=positive(float),
        default=None,
        help="seconds for the whole check (default: "
        + ", ".join(f"{d}{' --quick' * q} {s:.0f}" for (d, q), s in BUDGET_S.items())
        + ")",
    )
    parser.add_argument(
        "--cores",
        type=positive(int),
        default=len(os.sched_getaffinity(0)),
        help="cores the sections share (default: this process's)",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the table here, rewritten as rows arrive")
    parser.add_argument("--section", choices=list(SECTIONS), help=argparse.SUPPRESS)  # one section's process
    return parser


def joined_logs(folder: Path, sections: list[str]) -> str:
    """Every section's output, one after another under its name."""
    logs = [(name, folder / f"{name}.log") for name in sections]
    return "".join(f"\n===== {name}\n{log.read_text(errors='replace')}" for name, log in logs if log.is_file())


def main() -> int:
    args = parser().parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: no CUDA device on this machine (use --device cpu for a dry run)", file=sys.stderr)
        return 2
    if args.section:
        for row in SECTIONS[args.section].rows(form(args.section, args)):
            emit(row)
        return 0
    budget = args.budget or BUDGET_S[(args.device, args.quick)]
    os.environ.setdefault("FRAMEWORK_RUNS_DIR", tempfile.mkdtemp(prefix="gpu_check_runs_"))
    start = time.monotonic()
    logs = Path(tempfile.mkdtemp(prefix="gpu_check_logs_"))
    rows, timings = schedule(jobs(args), budget, args.cores, logs, args.out, gpu_sections.ROOT)
    if args.out:
        write_text_atomically(args.out.with_suffix(".log"), joined_logs(logs, [t.section for t in timings]))
    print(table(rows, timings))
    print(f"total wall time {time.monotonic() - start:.0f} s (budget {budget:.0f} s, {args.cores} cores); logs: {logs}")
    return 1 if any(row[2] in FAILING for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
