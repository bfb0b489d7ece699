"""Speed and memory of the library's fast paths, as ratios against references run alongside.

    python tools/bench_attention.py            # all sections (about 4 minutes on 2 CPU cores)
    python tools/bench_attention.py --quick    # small sizes only

1. The general Attention: fused ``scaled_dot_product_attention`` path vs the explicit path
   (same module, weights requested), and the linear-time kernel path vs its explicit path.
2. Criss-cross (recurrence 1, C = 512, B = 2) against the CCNet authors' algorithm
   (tools/ccnet_reference.py) and against non-local attention, forward + backward: time and
   peak memory. Non-local is measured twice: dense as in the papers (an explicit (HW x HW)
   softmax), and the library's block, which runs through the fused kernel.

Every measurement runs in a fresh process, so peak memory (the growth of the resident set
during one forward + backward) is not polluted by the one before. Times are medians.
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
sys.path.insert(0, str(ROOT))  # `tools.ccnet_reference` when run as a script


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def _measure(step, reps: int) -> dict:
    """Peak memory of one forward + backward, then the median time of ``reps`` more."""
    baseline = _rss_mb()
    step()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - baseline
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"ms": 1000 * statistics.median(times), "peak_mb": max(peak, 0.0)}


def _attention_case(case: str, reps: int) -> dict:
    import torch

    from framework.attention import Attention

    if case.startswith("kernel"):
        block, shape = Attention(64, score="kernel", distribution="normalize", num_heads=4), (4, 2048, 64)
    else:
        block, shape = Attention(256, score=case.split("-")[0], num_heads=8), (8, 256, 256)
    x = torch.randn(*shape, requires_grad=True)
    mask = torch.ones(shape[:2], dtype=torch.bool)
    mask[:, -shape[1] // 8 :] = False
    explicit = case.endswith("explicit")

    def step():
        out = block(x, key_padding_mask=mask, need_weights=explicit)
        (out.output if explicit else out).sum().backward()

    return _measure(step, reps)


def _criss_cross_case(impl: str, side: int, reps: int) -> dict:
    import torch

    from framework.attention.feature_map import CrissCrossAttention, NonLocal
    from tools.ccnet_reference import criss_cross_authors

    x = torch.randn(2, 512, side, side, requires_grad=True)
    if impl == "difference":  # outputs of one pass, ours against the authors', same weights
        block = CrissCrossAttention(512, recurrence=1)
        with torch.no_grad():
            block.gamma.fill_(1.0)
            authors = x + criss_cross_authors(block.query_conv(x), block.key_conv(x), block.value_conv(x))
            return {"max_abs": (block(x) - authors).abs().max().item()}
    if impl.startswith("non_local"):
        block = NonLocal(512)
        if impl == "non_local":
            forward = block
        else:  # dense, as in the papers: the (HW x HW) weights are built and kept for backward
            def forward(x):
                theta, phi, g = (conv(x).flatten(2) for conv in (block.theta, block.phi, block.g))
                weights = torch.einsum("bcu,bcv->buv", theta, phi).softmax(-1)
                y = torch.einsum("buv,bcv->bcu", weights, g).view(2, -1, side, side)
                return x + block.norm(block.out(y))
    else:
        block = CrissCrossAttention(512, recurrence=1)
        with torch.no_grad():
            block.gamma.fill_(1.0)
        if impl == "criss_cross":
            forward = block
        else:
            def forward(x):
                return x + block.gamma * criss_cross_authors(block.query_conv(x), block.key_conv(x), block.value_conv(x))

    def step():
        x.grad = None
        block.zero_grad()
        forward(x).sum().backward()

    return _measure(step, reps)


def _run(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def criss_cross_table(sides, title: str = "") -> None:
    """Print the criss-cross comparison: against the authors' algorithm and non-local at each side."""
    print(f"{title}Criss-cross vs the CCNet authors' algorithm and non-local, C=512, B=2, forward + backward, CPU")
    print(f"{'H=W':>4}{'impl':>22}{'ms':>10}{'peak MB':>10}{'time / ours':>13}{'memory / ours':>15}")
    for side in sides:
        reps = 5 if side < 97 else 3
        results = {impl: _run("criss_cross", impl, str(side), str(reps if "non_local" not in impl else 2))
                   for impl in ("criss_cross", "authors", "non_local", "non_local_dense")}
        ours = results["criss_cross"]
        for impl, r in results.items():
            print(f"{side:>4}{impl:>22}{r['ms']:>10.1f}{r['peak_mb']:>10.0f}{r['ms'] / ours['ms']:>12.2f}x"
                  f"{r['peak_mb'] / max(ours['peak_mb'], 1):>14.1f}x")
        difference = _run("criss_cross", "difference", str(side), "0")["max_abs"]
        print(f"{side:>4}{'max |ours - authors|':>22}{difference:>10.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        kind, *rest = args.one
        result = _attention_case(rest[0], 5) if kind == "attention" else _criss_cross_case(rest[0], int(rest[1]), int(rest[2]))
        print(json.dumps(result))
        return

    print("1. General Attention, forward + backward, CPU")
    print(f"{'case':<34}{'fused ms':>10}{'explicit ms':>13}{'speed-up':>10}{'fused MB':>10}{'explicit MB':>13}")
    for score, label in (("scaled_dot", "scaled_dot, B8 N256 D256 h8"), ("general", "general, same"),
                         ("cosine", "cosine, same"), ("kernel", "kernel (linear), B4 N2048 D64 h4")):
        fused, explicit = _run("attention", f"{score}-fused"), _run("attention", f"{score}-explicit")
        print(f"{label:<34}{fused['ms']:>10.1f}{explicit['ms']:>13.1f}{explicit['ms'] / fused['ms']:>9.2f}x"
              f"{fused['peak_mb']:>10.0f}{explicit['peak_mb']:>13.0f}")

    print()
    criss_cross_table((32,) if args.quick else (32, 64, 97), title="2. ")

if __name__ == "__main__":
    main()
