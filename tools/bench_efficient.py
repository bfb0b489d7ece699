"""Efficient self-attention blocks against ``mhsa``: accuracy on TREC, and time and memory per
epoch on long generated inputs, as ratios to ``mhsa`` measured in the same run.

    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_efficient             # both parts
    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_efficient --quick     # a few minutes
    python -m tools.bench_efficient --parts long --lengths 64 256 1024 4096 --device cuda

1. trec: the Transformer classifier of ``domains/nlp/transformer_cls_trec.yaml`` with each block
   as ``--model.attention`` (by name, with its defaults), trained the same way (the config's
   optimizer and seed, ``--trec-epochs`` epochs), its best val/acc checkpoint tested: test
   accuracy and macro F1, seconds per epoch of ``fit`` (validation included) and that time over
   ``mhsa``'s. Needs ``$FRAMEWORK_DATA_DIR/TREC``.
2. long: training epochs of the same classifier (width 64, 2 layers, 8 heads, attention
   pooling) on generated long-range matching texts (``domains.nlp.LongRangeMatch``) of exactly
   L words, for L in ``--lengths``. An epoch is ``--tokens`` tokens (``tokens / L`` texts, in
   batches of ``--batch-tokens / L`` texts), so its time stays flat for a block that is linear
   in L and grows with L for quadratic ones. Printed: seconds per epoch and peak memory (growth
   of the resident set during the epoch on the CPU; peak allocated memory on CUDA), and both
   over ``mhsa``'s at the same length. Blocks whose size depends on L get it: ``linformer``
   (k = 64) and the synthesizers take ``max_len = L`` (the random one factorised, rank 16), the
   sparse patterns a stride of about sqrt(L), ``transformer_xl`` segments of 64,
   ``adaptive_span`` S = 64, R = 16, ``performer`` 64 features. A block whose dense (N x N)
   weights would need more than ``--memory-cap`` GB is skipped, which the table says.

Every measurement runs in a fresh process, with ``--threads`` threads (1 by default: on a
small shared CPU torch's default threads spin against other processes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BLOCKS = (
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
#: blocks that build the (B, h, N, N) weights whatever the path
DENSE_WEIGHTS = ("synthesizer_dense", "synthesizer_random")
HEADS, DIM = 8, 64


def long_options(name: str, length: int) -> dict:
    """The block's options at length L (see the module's docstring)."""
    stride = 2 ** round(math.log2(math.sqrt(length)))
    return {
        "linformer": {"max_len": length, "rank": 64},
        "performer": {"features": 64},
        "sparse_strided": {"stride": stride},
        "sparse_fixed": {"stride": stride, "summary": max(1, stride // 8)},
        "adaptive_span": {"max_span": 64, "ramp": 16},
        "synthesizer_dense": {"max_len": length},
        "synthesizer_random": {"max_len": length, "rank": 16},
        "transformer_xl": {"segment": 64},
    }.get(name, {})


def dense_weights_gb(name: str, length: int, batch: int) -> float:
    """What the dense weights of one layer take, forward and backward (about 4 float copies)."""
    return batch * HEADS * length**2 * 4 * 4 / 2**30 if name in DENSE_WEIGHTS else 0.0


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


def run_trec(name: str, epochs: int, limit: float) -> dict:
    """Fit and test the TREC classifier with block ``name``: test metrics and seconds per epoch."""
    from framework.__main__ import main

    flags = [
        "--config",
        "configs/logger/csv.yaml",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        "--attention_maps.every_n_epochs=0",
    ]
    start = time.perf_counter()
    fitted = main(
        [
            "fit",
            "--config",
            "domains/nlp/transformer_cls_trec.yaml",
            *flags,
            f"--model.attention={name}",
            f"--trainer.max_epochs={epochs}",
            f"--trainer.limit_train_batches={limit}",
        ]
    )
    seconds = time.perf_counter() - start
    run = Path(fitted.trainer.default_root_dir)
    tested = main(
        [
            "test",
            "--config",
            str(run / "config.yaml"),
            "--ckpt_path",
            fitted.trainer.checkpoint_callback.best_model_path,
            *flags,
        ]
    )
    metrics = tested.trainer.callback_metrics
    return {
        "acc": float(metrics["test/acc"]),
        "f1": float(metrics["test/f1"]),
        "s_per_epoch": seconds / max(fitted.trainer.current_epoch, 1),
    }


def run_long(name: str, length: int, tokens: int, batch_tokens: int, device: str) -> dict:
    """One epoch of training on texts of ``length`` words: seconds and peak memory (MB)."""
    import torch
    import torch.nn.functional as F

    from domains.nlp import LongRangeMatch, TransformerClassifier
    from framework.attention import create

    texts, batch = max(1, tokens // length), max(1, batch_tokens // length)
    data = LongRangeMatch(
        min_length=length,
        max_length=length,
        train_size=texts,
        val_size=1,
        test_size=1,
        batch_size=batch,
        vocab_size=128,
    )
    batches = [{k: v.to(device) for k, v in b.items()} for b in data.train_dataloader()]
    torch.manual_seed(0)
    options = long_options(name, length)
    model = TransformerClassifier(
        128,
        2,
        dim=DIM,
        depth=2,
        attention=lambda dim: create(name, dim, num_heads=HEADS, **options),
        max_len=length,
        dropout=0.1,
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(b: dict) -> None:
        loss = F.cross_entropy(model(b["tokens"], b["mask"]), b["target"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    step(batches[0])  # warm-up: lazy initialisation, allocator, cached masks
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        with open("/proc/self/statm") as f:
            base = int(f.read().split()[1]) * resource.getpagesize() / 2**20
    start = time.perf_counter()
    for b in batches:
        step(b)
    if device == "cuda":
        torch.cuda.synchronize()
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
    return {"seconds": time.perf_counter() - start, "peak_mb": max(peak, 0.0), "texts": texts, "batch": batch}


def _one(args: argparse.Namespace, *what: str) -> dict:
    """Run one measurement in a fresh process; its JSON result, or the error's last line."""
    command = [sys.executable, "-m", "tools.bench_efficient", "--threads", str(args.threads), "--one", *what]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "WANDB_MODE": "disabled"}
    )
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:120]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def trec_table(args: argparse.Namespace) -> None:
    print(
        f"\n1. TREC-6 (domains/nlp/transformer_cls_trec.yaml, {args.trec_epochs} epoch(s)"
        f"{'' if args.trec_limit == 1.0 else f', {args.trec_limit:g} of each epoch'}, best val/acc checkpoint), "
        f"{args.threads} thread(s)"
    )
    print("| block | test/acc | test/f1 | s/epoch | time / mhsa |")
    print("|---|---:|---:|---:|---:|")
    base = None
    for name in args.blocks:
        r = _one(args, "trec", name, str(args.trec_epochs), str(args.trec_limit))
        if "error" in r:
            print(f"| {name} | failed: {r['error']} | | | |", flush=True)
            continue
        base = base or (r["s_per_epoch"] if name == "mhsa" else None)
        ratio = f"{r['s_per_epoch'] / base:.2f}x" if base else ""
        print(f"| {name} | {r['acc']:.3f} | {r['f1']:.3f} | {r['s_per_epoch']:.1f} | {ratio} |", flush=True)


def long_table(args: argparse.Namespace) -> None:
    print(
        f"\n2. Long inputs: one training epoch of {args.tokens} tokens (generated long-range matching texts), "
        f"forward + backward + AdamW, {args.device}, {args.threads} thread(s)"
    )
    print("| L | block | texts x batch | s/epoch | peak MB | time / mhsa | memory / mhsa |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for length in args.lengths:
        base = None
        batch = max(1, args.batch_tokens // length)
        for name in args.blocks:
            need = dense_weights_gb(name, length, batch)
            if need > args.memory_cap:
                print(
                    f"| {length} | {name} | | skipped: dense N x N weights need ~{need:.0f} GB > --memory-cap | | | |",
                    flush=True,
                )
                continue
            r = _one(args, "long", name, str(length), str(args.tokens), str(args.batch_tokens), args.device)
            if "error" in r:
                print(f"| {length} | {name} | | failed: {r['error']} | | | |", flush=True)
                continue
            if name == "mhsa":
                base = r
            time_ratio = f"{r['seconds'] / base['seconds']:.2f}x" if base else ""
            memory_ratio = f"{r['peak_mb'] / max(base['peak_mb'], 1.0):.2f}x" if base else ""
            print(
                f"| {length} | {name} | {r['texts']} x {r['batch']} | {r['seconds']:.2f} | {r['peak_mb']:.0f} | "
                f"{time_ratio} | {memory_ratio} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_efficient",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--parts", nargs="+", choices=("trec", "long"), default=["trec", "long"])
    parser.add_argument("--blocks", nargs="+", default=list(BLOCKS), help="mhsa first: the ratios are to it")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="TREC: 1 epoch on a quarter of the training set; long: L = 64, 256, 1024, 8192 tokens an epoch",
    )
    parser.add_argument("--trec-epochs", type=int, default=5)
    parser.add_argument("--trec-limit", type=float, default=1.0, help="the share of each TREC epoch trained")
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256, 1024, 4096])
    parser.add_argument("--tokens", type=int, default=32768, help="tokens in a long-input epoch")
    parser.add_argument("--batch-tokens", type=int, default=8192, help="tokens in a long-input batch")
    parser.add_argument(
        "--memory-cap", type=float, default=3.0, help="GB of dense weights above which a block is skipped"
    )
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    _threads(args.threads)
    if args.one:
        kind, *rest = args.one
        if kind == "trec":
            with tempfile.TemporaryDirectory(prefix="bench_efficient_") as runs:  # run folders, checkpoints
                os.environ["FRAMEWORK_RUNS_DIR"] = runs
                result = run_trec(rest[0], int(rest[1]), float(rest[2]))
        else:
            result = run_long(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), rest[4])
        print(json.dumps(result))
        return
    if args.quick:
        args.trec_epochs, args.trec_limit = 1, 0.25
        args.lengths, args.tokens = [64, 256, 1024], 8192
    if "trec" in args.parts:
        trec_table(args)
    if "long" in args.parts:
        long_table(args)


if __name__ == "__main__":
    main()
