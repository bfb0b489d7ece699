"""What probe rows and the attention statistics cost: memory on large maps, time in training.

    python -m tools.bench_probes            # both sections, CPU (about 5 minutes on 2 cores)
    python -m tools.bench_probes --memory   # section 1 only
    python -m tools.bench_probes --overhead # section 2 only
    python -m tools.bench_probes --cuda     # section 1 on the GPU (peak allocated memory)

1. Memory. A non-local block at 128 x 256 (32,768 positions, C = 64) and criss-cross at
   97 x 97 (C = 512, recurrence 2), B = 1, one forward pass without gradients: on its fused path
   (SDPA; the criss-cross operator), then the same under ``capture(model, probes=64)``, each in a
   fresh process. The extra memory of the capture is the difference of the two peaks (growth of
   the resident set during the pass; on the GPU, peak allocated memory), beside the size of the
   full map it replaces (what a capture without probes, or ``need_weights=True``, would hold).
2. Overhead. The demo (``domains/demo/demo.yaml``: 8,000 examples, 125 steps an epoch) trained
   for 2 epochs with the statistics callback and the collapse monitor, and again without them,
   in this process: per validation, the time of the callbacks' end hooks plus what the first
   validation step (which they watch with probes) takes beyond the others, less the same
   premium without them; over the time of the training steps of the same run. And the two
   fits' wall-clock times, which on a shared machine mostly measure the load of the moment.

Measured here (torch 2.11, a 2-core CPU shared with other jobs, load average 4 to 6):
non-local 128 x 256: 65 MB plain, 75 MB with 64 probes, 11 MB extra (15 MB of records; the
full map, 4,096 MB); criss-cross 97 x 97 x 512: 164 MB plain, 175 MB with probes, 11 MB extra
(10 MB of records; the full map, 338 MB). Overhead on the demo: 1.2 s per validation for the
two callbacks (all of it in their hooks; the watched first step took 3 ms more than without
them), 2.0 % of the training steps' time (1.7 % in a second run). The fits' wall clocks with
the callbacks were 19 % and 117 % longer in two runs, but the training steps alone (which the
callbacks do not touch) had per-epoch medians from 65 to 1,700 ms in the same fit with or without
them: that is the load, not the callbacks.
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
CASES = {"non_local": (64, 128, 256), "criss_cross": (512, 97, 97)}  # channels, H, W
PROBES = 64


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def _block(name: str, device: str):
    import torch

    from framework.attention import create

    torch.manual_seed(0)
    channels, height, width = CASES[name]
    block = create(name, channels).eval().to(device)
    return block, torch.randn(1, channels, height, width, device=device)


def _memory_case(name: str, mode: str) -> dict:
    """One forward pass of a large map, plain or under a capture with probes: peak growth in MB."""
    import torch

    from framework.attention import capture

    torch.set_num_threads(2)
    block, x = _block(name, "cpu")
    baseline = _rss_mb()
    start = time.perf_counter()
    with torch.no_grad():
        if mode == "plain":
            block(x)
            held = 0
        else:
            with capture(block, probes=PROBES) as rows:
                block(x)
            held = sum(
                t.numel() * t.element_size()
                for records in rows.values()
                for r in records
                for t in (r.weights, r.valid, r.logits, r.lse)
                if t is not None
            )
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - baseline
    return {"peak_mb": max(peak, 0.0), "held_mb": held / 2**20, "s": seconds}


def _run(*args: str) -> dict:
    command = [sys.executable, "-m", "tools.bench_probes", "--one", *args]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _full_map_mb(name: str) -> float:
    """The size of the map a capture without probes would hold, as (HW x HW) float32 weights."""
    _, height, width = CASES[name]
    return (height * width) ** 2 * 4 / 2**20


def memory_table() -> None:
    print(f"1. Extra memory of capture(probes={PROBES}) on large maps, B = 1, forward without gradients, CPU")
    print(
        f"{'block':<12}{'map':>10}{'plain peak MB':>15}{'probes peak MB':>16}{'extra MB':>10}{'records MB':>12}"
        f"{'full map MB':>13}"
    )
    for name in CASES:
        plain, probed = _run("memory", name, "plain"), _run("memory", name, "probes")
        _, height, width = CASES[name]
        print(
            f"{name:<12}{f'{height}x{width}':>10}{plain['peak_mb']:>15.0f}{probed['peak_mb']:>16.0f}"
            f"{probed['peak_mb'] - plain['peak_mb']:>10.0f}{probed['held_mb']:>12.1f}{_full_map_mb(name):>13.0f}",
            flush=True,
        )


def memory_table_cuda() -> None:
    import torch

    from framework.attention import capture

    print(
        f"1. Extra memory of capture(probes={PROBES}) on large maps, B = 1, forward without gradients, "
        f"{torch.cuda.get_device_name()}"
    )
    print(f"{'block':<12}{'plain peak MB':>15}{'probes peak MB':>16}{'extra MB':>10}{'full map MB':>13}")
    for name in CASES:
        block, x = _block(name, "cuda")
        peaks = []
        for probes in (None, PROBES):
            with torch.no_grad():
                block(x)  # compiled kernels, cached masks
                torch.cuda.synchronize()
                base = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                if probes is None:
                    block(x)
                else:
                    with capture(block, probes=probes):
                        block(x)
                torch.cuda.synchronize()
            peaks.append((torch.cuda.max_memory_allocated() - base) / 2**20)
        print(f"{name:<12}{peaks[0]:>15.0f}{peaks[1]:>16.0f}{peaks[1] - peaks[0]:>10.0f}{_full_map_mb(name):>13.0f}")


def overhead_table(epochs: int = 2) -> None:
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.callbacks import Callback

    from domains.demo import AssociativeRecall, SequenceClassification, SequenceClassifier
    from framework.callbacks import AttentionCollapse, AttentionStatistics
    from framework.task_module import TaskModule

    class Timed(Callback):
        """Times the training steps and the validation steps, and the end-of-step and end-of-validation
        hooks of the callbacks given (wrapped in place). Put first, its step clock starts before the
        others' on_validation_batch_start and stops before their on_validation_batch_end."""

        def __init__(self, inner: list) -> None:
            self.steps, self.validation_steps, self.callbacks, self._start = [], [], 0.0, 0.0
            for callback in inner:
                for hook in ("on_validation_batch_end", "on_validation_end"):
                    setattr(callback, hook, self._timed(getattr(callback, hook)))

        def _timed(self, hook):
            def timed(*args, **kwargs):
                start = time.perf_counter()
                hook(*args, **kwargs)
                self.callbacks += time.perf_counter() - start

            return timed

        def on_train_batch_start(self, *args) -> None:
            self._start = time.perf_counter()

        def on_train_batch_end(self, *args) -> None:
            self.steps.append(time.perf_counter() - self._start)

        def on_validation_batch_start(self, *args) -> None:
            self._start = time.perf_counter()

        def on_validation_batch_end(self, trainer, module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
            if batch_idx == 0:
                self.validation_steps.append([])
            self.validation_steps[-1].append(time.perf_counter() - self._start)

        def first_step_premium(self) -> float:
            """Mean over validations of the first step's time less the median of the others' (the
            statistics watch the first step)."""
            return sum(times[0] - statistics.median(times[1:]) for times in self.validation_steps) / len(
                self.validation_steps
            )

    def fit(inner: list) -> tuple[Timed, float]:
        torch.manual_seed(0)
        timed = Timed(inner)
        module = TaskModule(SequenceClassifier(177, 10, dim=64, depth=2), SequenceClassification(10))
        module.configure_optimizers = lambda: torch.optim.AdamW(module.parameters(), lr=3e-3, weight_decay=0.01)
        trainer = pl.Trainer(
            max_epochs=epochs,
            logger=False,
            callbacks=[timed, *inner],
            enable_progress_bar=False,
            enable_checkpointing=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
        )
        start = time.perf_counter()
        trainer.fit(module, AssociativeRecall())
        return timed, time.perf_counter() - start

    torch.set_num_threads(2)
    print(
        f"2. Overhead of the attention statistics and the collapse monitor: the demo, {epochs} epochs of 125 steps, CPU"
    )
    without, plain_seconds = fit([])
    stats = AttentionStatistics()
    timed, seconds = fit([stats, AttentionCollapse()])
    step = sum(timed.steps) / len(timed.steps)
    hooks = timed.callbacks / epochs
    watched = timed.first_step_premium() - without.first_step_premium()
    per_validation = hooks + watched
    print(
        f"mean training step: {1000 * step:.1f} ms; per validation: {1000 * hooks:.1f} ms in the callbacks' hooks "
        f"+ {1000 * watched:.1f} ms more in the watched first step (against the fit without them) = "
        f"{1000 * per_validation:.1f} ms ({per_validation / step:.2f} of a training step), {len(stats.results)} blocks"
    )
    print(
        f"overhead: {100 * per_validation * epochs / sum(timed.steps):.2f} % of the training steps' time "
        f"({len(timed.steps) // epochs} steps an epoch, one validation an epoch)"
    )
    print(
        f"fit wall clock: {seconds:.1f} s with, {plain_seconds:.1f} s without "
        f"({100 * (seconds / plain_seconds - 1):+.1f} %, "
        "two runs of one process: on a shared machine this is mostly the load of the moment)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_probes", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memory", action="store_true", help="section 1 only")
    parser.add_argument("--overhead", action="store_true", help="section 2 only")
    parser.add_argument("--cuda", action="store_true", help="section 1 on the GPU")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_memory_case(*args.one[1:])))
        return
    if args.cuda:
        memory_table_cuda()
        return
    if not args.overhead:
        memory_table()
        print()
    if not args.memory:
        overhead_table()


if __name__ == "__main__":
    main()
