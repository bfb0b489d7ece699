"""Forward + backward cost of the catalogue-II vision blocks (SAGAN, axial, stand-alone) against
the non-local block, on the CPU, as ratios.

    python -m tools.bench_vision_blocks_ii                     # B=4, C=64, H=W in 16 32 64
    python -m tools.bench_vision_blocks_ii --sides 16 32 --channels 128 --batch 2

Every measurement runs in a fresh single-threaded process (``torch.set_num_threads(1)``): the
peak memory of one forward + backward is the growth of the resident set (as in
tools/bench_attention.py), and the time is the median CPU time of the process over ``--reps``
more steps, which other processes on a shared machine disturb far less than wall-clock time.
The blocks run as the classifiers train them: no weights requested (the fused kernel where the
block has one), their gates set to 1 so that every branch computes.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: name: (registry name, constructor arguments)
BLOCKS = {
    "non_local": ("non_local", {}),
    "sagan": ("sagan", {}),
    "sagan (BigGAN: pooled keys, C/2 values)": ("sagan", {"pool": True, "value_reduction": 2}),
    "axial (8 heads)": ("axial", {}),
    "stand_alone (k=7, 8 heads)": ("stand_alone", {}),
    "criss_cross (R=2)": ("criss_cross", {}),
}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def measure(block: str, batch: int, channels: int, side: int, reps: int) -> dict:
    """One block at one size: {"ms": median CPU ms of forward + backward, "peak_mb": ...}."""
    import torch

    from framework.attention import create

    torch.set_num_threads(1)
    torch.manual_seed(0)
    name, kwargs = BLOCKS[block]
    module = create(name, channels, **kwargs)
    with torch.no_grad():  # the zero-initialised gates (gamma, non-local's last BN weight) open
        for param_name, param in module.named_parameters():
            if param_name.rpartition(".")[2] == "gamma" or param_name == "norm.weight":
                param.fill_(1.0)
    x = torch.randn(batch, channels, side, side, requires_grad=True)

    def step():
        x.grad = None
        module.zero_grad()
        module(x).sum().backward()

    baseline = _rss_mb()
    step()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - baseline
    times = []
    for _ in range(reps):
        start = time.process_time()
        step()
        times.append(time.process_time() - start)
    return {"ms": 1000 * statistics.median(times), "peak_mb": max(peak, 0.0)}


def run(*args: str) -> dict:
    command = [sys.executable, "-m", "tools.bench_vision_blocks_ii", "--one", *args]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bench_vision_blocks_ii", description=__doc__.splitlines()[0])
    parser.add_argument("--sides", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--one", nargs=4, metavar=("BLOCK", "BATCH", "CHANNELS", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        block, batch, channels, side = args.one
        print(json.dumps(measure(block, int(batch), int(channels), int(side), args.reps)))
        return
    print(
        f"Forward + backward, B={args.batch}, C={args.channels}, one thread, CPU time (median of {args.reps}); "
        "ratios against non_local at the same size"
    )
    print("| H = W | block | ms | peak MB | time / non_local | memory / non_local |")
    print("|---|---|---|---|---|---|")
    for side in args.sides:
        rows = {
            block: run(block, str(args.batch), str(args.channels), str(side), "--reps", str(args.reps))
            for block in BLOCKS
        }
        base = rows["non_local"]
        for block, r in rows.items():
            print(
                f"| {side} | {block} | {r['ms']:.1f} | {r['peak_mb']:.0f} | {r['ms'] / base['ms']:.2f}x | "
                f"{r['peak_mb'] / max(base['peak_mb'], 1.0):.2f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
