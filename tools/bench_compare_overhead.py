"""What ``compare`` costs beyond training: N one-epoch demo runs through ``compare --jobs 1``
against the same N fits in one Python process.

    python -m tools.bench_compare_overhead                 # N = 6, the demo's default logger (W&B, offline)
    python -m tools.bench_compare_overhead --runs 10 --csv  # a CSV logger instead

Both sides train the same runs (the demo config, one epoch of 1024 examples, seeds 0 .. N-1). The reference
is ``fit`` of each run called N times in one process that has already imported the
framework: training, validation and checkpoints, nothing else. ``compare`` does more for
each run: its own start-up, checking the cell's config, a ``test`` of the best checkpoint,
the tables and plots at the end; the per-run overhead is (compare's wall time - the
reference's) / N, everything ``compare`` adds, its fixed costs shared by the N runs.

Wall time is what a user waits; on a shared machine it also holds other programs' load, so
the processor seconds of both sides (user + system, every process of theirs that ended) are
given as well, with the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The demo, one epoch of 1024 examples (16 steps), no pictures: an ablation's or a seed sweep's small run.
RUN = [
    "--config",
    "domains/demo/demo.yaml",
    "--data.train_size=1024",
    "--data.val_size=256",
    "--data.test_size=256",
    "--trainer.max_epochs=1",
    "--trainer.enable_progress_bar=false",
    "--attention_maps.every_n_epochs=0",
]
CSV = ["--config", "configs/logger/csv.yaml"]


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def reference(runs: int, extra: list[str], root: Path) -> tuple[list[float], float]:
    """Wall seconds of each of ``runs`` fits called one after another in this process (the
    framework imported beforehand), and the processor seconds of all of them."""
    from framework.__main__ import main

    importlib.import_module("framework.commands.fit")  # imports are start-up, not training

    for name in ("lightning.pytorch", "lightning.fabric"):  # their log handlers write to the terminal itself
        logging.getLogger(name).setLevel(logging.WARNING)
    seconds = []
    cpu = cpu_seconds(resource.RUSAGE_SELF) + cpu_seconds(resource.RUSAGE_CHILDREN)
    for seed in range(runs):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["fit", *RUN, *extra, f"--seed_everything={seed}", f"--run_dir={root / f'fit{seed}'}"])
        seconds.append(time.perf_counter() - start)
    return seconds, cpu_seconds(resource.RUSAGE_SELF) + cpu_seconds(resource.RUSAGE_CHILDREN) - cpu


def through_compare(runs: int, extra: list[str]) -> tuple[float, float]:
    """Wall and processor seconds of ``python -m framework compare`` doing the same runs (and
    their tests), one at a time."""
    command = [
        sys.executable,
        "-m",
        "framework",
        "compare",
        *RUN,
        *extra,
        "--seeds",
        str(runs),
        "--jobs",
        "1",
        "--name",
        "bench",
        "--status_every",
        "0",
    ]
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"compare failed (status {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds, cpu_seconds(resource.RUSAGE_CHILDREN) - cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_compare_overhead", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--runs", type=int, default=6, help="runs on each side (default 6)")
    parser.add_argument("--csv", action="store_true", help="log to a CSV file instead of W&B (offline)")
    options = parser.parse_args(argv)
    extra = CSV if options.csv else []
    with tempfile.TemporaryDirectory(prefix="bench_compare_") as root:
        os.environ["FRAMEWORK_RUNS_DIR"] = root
        os.environ.setdefault("WANDB_MODE", "offline")
        load = os.getloadavg()[0]
        compare_wall, compare_cpu = through_compare(options.runs, extra)
        fits, fits_cpu = reference(options.runs, extra, Path(root) / "reference")
        load = max(load, os.getloadavg()[0])
    n, fits_wall = options.runs, sum(fits)
    print(
        f"{n} one-epoch demo runs ({'CSV' if options.csv else 'W&B offline'} logger, {os.cpu_count()} CPUs, "
        f"load average up to {load:.1f}):"
    )
    print(
        f"  fits in one process: {fits_wall:.1f} s wall ({', '.join(f'{s:.1f}' for s in fits)}), {fits_cpu:.1f} s CPU"
    )
    print(
        f"  compare --jobs 1:    {compare_wall:.1f} s wall, {compare_cpu:.1f} s CPU (fit and test of each run, "
        "tables and plots)"
    )
    print(
        f"  overhead per run:    {(compare_wall - fits_wall) / n:.1f} s wall, {(compare_cpu - fits_cpu) / n:.1f} s CPU"
    )


if __name__ == "__main__":
    main()
