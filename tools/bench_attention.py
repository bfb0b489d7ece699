"""Speed and memory of the library's fast paths, as ratios against references run alongside.

    python -m tools.bench_attention            # all CPU sections (about 5 minutes on 2 cores)
    python -m tools.bench_attention --quick    # small sizes only
    python -m tools.bench_attention --cuda     # the criss-cross core on the GPU (section 3) only
    python -m tools.bench_attention --efficient   # the efficient self-attention blocks (section 4) only

1. The general Attention: fused ``scaled_dot_product_attention`` path vs the explicit path
   (same module, weights requested), and the linear-time kernel path vs its explicit path.
2. Criss-cross (recurrence 1, C = 512, B = 2) against the CCNet authors' algorithm
   (tools/ccnet_reference.py) and against non-local attention, forward + backward:
   time and peak memory. ``criss_cross_batched`` is the same block with the portable path's
   column matmuls batched (as on devices other than the CPU) instead of one per image.
   Non-local is measured twice: dense as in the papers (an explicit (HW x HW) softmax), and
   the library's block, which runs through the fused kernel.
3. On CUDA, the criss-cross core alone (q, k, v -> y, C = 512, C' = 64, forward + backward,
   bfloat16 and float32): ours (the Triton kernels behind ``framework::criss_cross``), our
   portable path, the authors' algorithm, its einsum form and that form under
   ``torch.compile``, all on views of one channels-last (B, 2C' + C, H, W) tensor, as the
   block's convolution gives them. Median time of CUDA-event-timed steps, peak allocated
   memory of one step above its inputs, ratios against the authors' algorithm of the same
   run, and the largest difference of each output from the authors'.

4. The efficient self-attention blocks (Linformer, Performer, sparse patterns, adaptive span,
   Synthesizer, Transformer-XL; options as in ``tools/bench_efficient.py``) against ``mhsa``,
   forward + backward of one block, B = 1, D = 64, 8 heads, N = 256 ... 4096 (CPU): time and
   peak memory, and their ratios to ``mhsa`` at the same N.

In sections 1, 2 and 4 every measurement runs in a fresh process, so peak memory (the growth of
the resident set during one forward + backward) is not polluted by the one before. Times are
medians.
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

    from framework.attention.feature_map import CrissCrossAttention, NonLocal, criss_cross_op
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
        if impl.startswith("criss_cross"):
            forward = block
            if impl == "criss_cross_batched":
                criss_cross_op.PER_IMAGE_DEVICES = frozenset()
        else:

            def forward(x):
                return x + block.gamma * criss_cross_authors(
                    block.query_conv(x), block.key_conv(x), block.value_conv(x)
                )

    def step():
        x.grad = None
        block.zero_grad()
        forward(x).sum().backward()

    return _measure(step, reps)


def _efficient_case(name: str, n: int, reps: int) -> dict:
    import torch

    from framework.attention import create
    from tools.bench_efficient import long_options

    block = create(name, 64, num_heads=8, **long_options(name, n))
    x = torch.randn(1, n, 64, requires_grad=True)
    mask = torch.ones(1, n, dtype=torch.bool)

    def step():
        x.grad = None
        block.zero_grad()
        block(x, mask).sum().backward()

    return _measure(step, reps)


EFFICIENT = (
    "mhsa",
    "linformer",
    "performer",
    "sparse_strided",
    "sparse_fixed",
    "adaptive_span",
    "synthesizer_dense",
    "synthesizer_random",
    "transformer_xl",
)


def efficient_table(lengths, title: str = "") -> None:
    """Print the efficient blocks' forward + backward time and memory against sequence length."""
    print(f"{title}Efficient self-attention vs mhsa, one block, B=1, D=64, h=8, forward + backward, CPU")
    print(f"{'N':>5}{'block':>20}{'ms':>10}{'peak MB':>10}{'time / mhsa':>13}{'memory / mhsa':>15}")
    for n in lengths:
        base = None
        for name in EFFICIENT:
            r = _run("efficient", name, str(n), "3" if n < 4096 else "1")
            base = base or r
            print(
                f"{n:>5}{name:>20}{r['ms']:>10.1f}{r['peak_mb']:>10.0f}{r['ms'] / base['ms']:>12.2f}x"
                f"{r['peak_mb'] / max(base['peak_mb'], 1):>14.2f}x",
                flush=True,
            )


def _run(*args: str) -> dict:
    command = [sys.executable, "-m", "tools.bench_attention", "--one", *args]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def criss_cross_table(sides, title: str = "") -> None:
    """Print the criss-cross comparison: against the authors' algorithm and non-local at each side."""
    print(f"{title}Criss-cross vs the CCNet authors' algorithm and non-local, C=512, B=2, forward + backward, CPU")
    print(f"{'H=W':>4}{'impl':>22}{'ms':>10}{'peak MB':>10}{'time / ours':>13}{'memory / ours':>15}")
    for side in sides:
        reps = 5 if side < 97 else 3
        results = {
            impl: _run("criss_cross", impl, str(side), str(reps if "non_local" not in impl else 2))
            for impl in ("criss_cross", "criss_cross_batched", "authors", "non_local", "non_local_dense")
        }
        ours = results["criss_cross"]
        for impl, r in results.items():
            print(
                f"{side:>4}{impl:>22}{r['ms']:>10.1f}{r['peak_mb']:>10.0f}{r['ms'] / ours['ms']:>12.2f}x"
                f"{r['peak_mb'] / max(ours['peak_mb'], 1):>14.1f}x"
            )
        difference = _run("criss_cross", "difference", str(side), "0")["max_abs"]
        print(f"{side:>4}{'max |ours - authors|':>22}{difference:>10.1e}")


GPU_CASES = ((8, 97), (2, 129), (2, 97))  # (B, H = W); CCNet's Cityscapes feature map is 97 x 97
GPU_IMPLS = {
    "ours": "ours (Triton)",
    "portable": "our portable path",
    "authors": "authors' algorithm",
    "einsum": "einsum form",
    "einsum_compiled": "einsum, torch.compile",
}
INNER, CHANNELS = 64, 512


def _gpu_cores() -> dict:
    """impl -> f(qkv (B, 2C' + C, H, W) channels-last) = y (B, C, H, W), forward + backward differentiable."""
    import torch

    from framework.attention.feature_map import criss_cross_op
    from tools.ccnet_reference import criss_cross_authors, criss_cross_einsum

    class Portable(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            out, lse = criss_cross_op.portable_forward(q, k, v)
            ctx.save_for_backward(q, k, v, out, lse)
            return out

        @staticmethod
        def backward(ctx, grad):
            return criss_cross_op.portable_backward(grad.contiguous(), *ctx.saved_tensors)

    def channels_last(core):
        def f(qkv):
            q, k, v = qkv.permute(0, 2, 3, 1).split([INNER, INNER, CHANNELS], dim=-1)
            return core(q, k, v).permute(0, 3, 1, 2)

        return f

    def channels_first(core):
        return lambda qkv: core(*qkv.split([INNER, INNER, CHANNELS], dim=1))

    return {
        "ours": channels_last(lambda q, k, v: criss_cross_op.criss_cross(q, k, v)[0]),
        "portable": channels_last(Portable.apply),
        "authors": channels_first(criss_cross_authors),
        "einsum": channels_first(criss_cross_einsum),
        "einsum_compiled": channels_first(torch.compile(criss_cross_einsum, dynamic=False)),
    }


def _gpu_measure(core, qkv, grad, reps: int = 20) -> dict:
    """Median ms of forward + backward (CUDA events), and the peak memory of one step above its inputs."""
    import torch

    def step():
        qkv.grad = None
        core(qkv).backward(grad)

    for _ in range(3):  # compilation, autotuning, allocator warm-up
        step()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    qkv.grad = None
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return {"ms": statistics.median(times), "peak_mb": peak}


def criss_cross_gpu_table(cases=GPU_CASES) -> None:
    """Print, as a markdown table, the criss-cross core on CUDA against the authors' algorithm."""
    import torch

    print(
        f"Criss-cross core on {torch.cuda.get_device_name()}, C={CHANNELS}, C'={INNER}, forward + backward; "
        f"torch.backends.cuda.matmul.allow_tf32 = {torch.backends.cuda.matmul.allow_tf32}"
    )
    print(
        "| B | H x W | dtype | impl | ms | peak MB | speed-up vs authors | memory / authors | max abs diff vs authors |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    cores, results = _gpu_cores(), {}
    for batch, side in cases:
        for dtype in (torch.bfloat16, torch.float32):
            gen = torch.Generator(device="cuda").manual_seed(0)
            qkv = torch.randn(batch, 2 * INNER + CHANNELS, side, side, device="cuda", generator=gen)
            qkv[:, : 2 * INNER] *= INNER**-0.25  # energies of unit variance
            qkv = qkv.to(dtype).contiguous(memory_format=torch.channels_last).requires_grad_()
            grad = torch.randn(batch, CHANNELS, side, side, device="cuda", generator=gen, dtype=dtype)
            grad = grad.contiguous(memory_format=torch.channels_last)
            reference = cores["authors"](qkv).detach().float()
            differences = {
                impl: (core(qkv).detach().float() - reference).abs().max().item() for impl, core in cores.items()
            }
            del reference
            measured = {impl: _gpu_measure(core, qkv, grad) for impl, core in cores.items()}
            authors = measured["authors"]
            for impl, r in measured.items():
                print(
                    f"| {batch} | {side}x{side} | {str(dtype)[6:]} | {GPU_IMPLS[impl]} | "
                    f"{r['ms']:.2f} | {r['peak_mb']:.0f} | "
                    f"{authors['ms'] / r['ms']:.2f}x | {r['peak_mb'] / authors['peak_mb']:.2f}x | "
                    f"{differences[impl]:.1e} |",
                    flush=True,
                )
            results[batch, side, dtype] = measured
    if (8, 97, torch.bfloat16) in results:
        r = results[8, 97, torch.bfloat16]
        ours = r["ours"]
        print(
            "Targets (H100, bf16, B=8, 97x97): "
            f"ours >= 2x the authors' algorithm: {r['authors']['ms'] / ours['ms']:.2f}x; "
            f">= 1.3x the compiled einsum: {r['einsum_compiled']['ms'] / ours['ms']:.2f}x; "
            f"peak memory <= the authors': {ours['peak_mb'] / r['authors']['peak_mb']:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_attention",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--cuda", action="store_true", help="the criss-cross core on the GPU (section 3) only")
    parser.add_argument("--efficient", action="store_true", help="the efficient self-attention blocks (section 4) only")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        kind, *rest = args.one
        if kind == "efficient":
            result = _efficient_case(rest[0], int(rest[1]), int(rest[2]))
        elif kind == "attention":
            result = _attention_case(rest[0], 5)
        else:
            result = _criss_cross_case(rest[0], int(rest[1]), int(rest[2]))
        print(json.dumps(result))
        return
    if args.cuda:
        criss_cross_gpu_table(GPU_CASES[:1] if args.quick else GPU_CASES)
        return
    efficient_lengths = (256, 1024) if args.quick else (256, 1024, 4096)
    if args.efficient:
        efficient_table(efficient_lengths, title="4. ")
        return

    print("1. General Attention, forward + backward, CPU")
    print(f"{'case':<34}{'fused ms':>10}{'explicit ms':>13}{'speed-up':>10}{'fused MB':>10}{'explicit MB':>13}")
    for score, label in (
        ("scaled_dot", "scaled_dot, B8 N256 D256 h8"),
        ("general", "general, same"),
        ("cosine", "cosine, same"),
        ("kernel", "kernel (linear), B4 N2048 D64 h4"),
    ):
        fused, explicit = _run("attention", f"{score}-fused"), _run("attention", f"{score}-explicit")
        print(
            f"{label:<34}{fused['ms']:>10.1f}{explicit['ms']:>13.1f}{explicit['ms'] / fused['ms']:>9.2f}x"
            f"{fused['peak_mb']:>10.0f}{explicit['peak_mb']:>13.0f}"
        )

    print()
    criss_cross_table((32,) if args.quick else (32, 64, 97), title="2. ")
    print()
    efficient_table(efficient_lengths, title="4. ")


if __name__ == "__main__":
    main()
