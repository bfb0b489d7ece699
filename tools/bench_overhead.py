"""Framework overhead: seconds per epoch of ``fit`` against a hand-written loop.

Both train the same network (same initial weights) on the same batches with the same
optimizer and precision; an epoch is the training batches, one validation pass that
computes the task's metrics, and one checkpoint written to disk. ``fit`` runs with the
config's defaults (W&B logger offline, progress bar, attention pictures, checkpoints);
the hand loop is what a user would write in plain PyTorch. The two take turns in one process,
an epoch of ``fit`` then an epoch of the loop (run from a callback between ``fit``'s epochs, on
its own copy of the module), so that both see the same load of a shared machine; the ratio is
of the medians. Start-up (imports, building the model, data set-up, the first epoch's warm-up)
is excluded: the first epoch of each is not timed. The 1-minute load average is printed with
the figures: compare ratios measured under similar loads. ``fit`` draws its pictures in a
process of its own (:mod:`framework.drawing`) while it trains: the CPU seconds that process
spent an epoch, on another core, are printed beside the ratio (they are in neither time).

    python -m tools.bench_overhead                          # the three models on this machine's device
    python -m tools.bench_overhead --models ccnet --device cpu --epochs 4
    python -m tools.bench_overhead --profile ccnet          # where fit's time goes (torch profiler)
    python -m tools.bench_overhead --models ccnet --steps   # one training step, eager and compiled

It also reports, on CUDA, the kernels launched per training step and the share of a step's
wall time the GPU is busy (from the torch profiler), the figures that show whether a small
model keeps the GPU fed. Ratios (fit / loop) are the result; absolute times depend on the machine.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import torch

#: benchmark name -> config
MODELS = {
    "ccnet": "domains/vision/ccnet.yaml",
    "transformer_cls": "domains/nlp/transformer_cls.yaml",
    "memn2n": "domains/memory/memn2n.yaml",
}
#: (training, validation) batches of a timed epoch on the CPU where a whole epoch takes minutes
CPU_LIMITS = {"ccnet": (20, 5)}


def build(
    config: str, device: str, train_batches: Optional[int], val_batches: Optional[int], epochs: int, extra: list[str]
):
    """The CLI's objects for one config, ready to fit (nothing run yet); ``None`` batches: the whole split."""
    from framework.commands.fit import FrameworkCLI

    limits = [f"--trainer.limit_train_batches={train_batches}"] if train_batches else []
    limits += [f"--trainer.limit_val_batches={val_batches}"] if val_batches else []
    args = [
        "--config",
        config,
        f"--trainer.max_epochs={epochs}",
        *limits,
        "--trainer.num_sanity_val_steps=0",
        "--experiment=bench_overhead",
        *extra,
    ]
    if device == "cuda":
        args += ["--config", "configs/trainer/gpu.yaml"]
    else:
        args += ["--trainer.accelerator=cpu"]
    return FrameworkCLI(args=args, run=False)


class EpochClock:
    """The time at epoch boundaries: wall-clock time, CUDA synchronised; or, with ``cpu_time``,
    the CPU time of this process (all its threads)."""

    cpu_time = False

    @classmethod
    def now(cls) -> float:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return time.process_time() if cls.cpu_time else time.perf_counter()


class HandLoop:
    """Plain PyTorch: the same network, task, optimizer, precision and batches as ``fit``, on a
    copy of the module taken before ``fit`` (the same initial weights, an optimizer of its own)."""

    def __init__(
        self, cli, module, train_batches: Optional[int], val_batches: Optional[int], device: str, folder: Path
    ) -> None:
        self.module = module.to(device)
        optimizer = module.configure_optimizers()
        optimizer = optimizer[0][0] if isinstance(optimizer, tuple) else optimizer
        self.optimizer = optimizer["optimizer"] if isinstance(optimizer, dict) else optimizer
        self.clip = cli.trainer.gradient_clip_val
        self.autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda")
        data = cli.datamodule
        data.setup("fit")
        self.train, self.val = data.train_dataloader(), data.val_dataloader()
        self.batches, self.device, self.file = (train_batches, val_batches), device, folder / "loop.ckpt"

    def epoch(self) -> float:
        """Seconds of one epoch: training, a validation that computes the metrics, a checkpoint."""
        from lightning.pytorch.utilities import move_data_to_device

        model, task, metrics, optimizer = self.module.model, self.module.task, self.module.val_metrics, self.optimizer
        start = EpochClock.now()
        model.train()
        for i, batch in enumerate(self.train):
            if i == self.batches[0]:  # None: the whole split
                break
            batch = move_data_to_device(batch, self.device)
            with self.autocast:
                loss = task.step(model, batch, "train").loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if self.clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), self.clip)
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for i, batch in enumerate(self.val):
                if i == self.batches[1]:
                    break
                batch = move_data_to_device(batch, self.device)
                with self.autocast:
                    step = task.step(model, batch, "val")
                metrics.update(step.preds, step.target, **(step.metric_inputs or {}))
        metrics.compute()
        metrics.reset()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, self.file)
        return EpochClock.now() - start


def time_interleaved(cli, loop: HandLoop) -> tuple[list[float], list[float], list[float]]:
    """Seconds of each epoch of ``fit`` and of ``loop``, taken in turns (a fit epoch, a loop epoch,
    a fit epoch ...), so that both see the same load of the machine, and the CPU seconds the
    drawing process (:mod:`framework.drawing`) spent on each fit epoch's pictures, on another
    core; the first of each is not timed."""
    import lightning.pytorch as pl

    from framework.drawing import drawer

    fit_epochs, loop_epochs, drawing = [], [], []

    class Turns(pl.Callback):
        started: Optional[float] = None
        drawn = 0.0

        def _end_fit_epoch(self) -> None:
            if self.started is not None:
                fit_epochs.append(EpochClock.now() - self.started)
                drawing.append(drawer().cpu_seconds() - self.drawn)
                loop_epochs.append(loop.epoch())

        def on_train_epoch_start(self, trainer, module) -> None:
            self._end_fit_epoch()
            self.started, self.drawn = EpochClock.now(), drawer().cpu_seconds()

        def on_train_end(self, trainer, module) -> None:
            self._end_fit_epoch()

    cli.trainer.callbacks.append(Turns())
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return fit_epochs[1:], loop_epochs[1:], drawing[1:]


def gpu_activity(cli, module, device: str, steps: int = 10) -> tuple[float, float]:
    """(CUDA kernels per training step, share of the step's wall time the GPU is busy)."""
    from lightning.pytorch.utilities import move_data_to_device
    from torch.profiler import ProfilerActivity, profile

    model, task = module.model.to(device).train(), module.task.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    batch = move_data_to_device(next(iter(cli.datamodule.train_dataloader())), device)

    def step() -> None:
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = task.step(model, batch, "train").loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy = sum(e.device_time for e in kernels) / 1e6  # microseconds -> seconds
    return len(kernels) / steps, busy / wall


def step_times(cli, module, device: str, modes: list[str], steps: int = 30) -> dict[str, float]:
    """Median seconds of one training step (forward, backward, optimizer) of the config's model in
    a plain loop, eager and under ``torch.compile`` in each of ``modes``, on one repeated batch."""
    from lightning.pytorch.utilities import move_data_to_device

    initial = copy.deepcopy(module.state_dict())
    batch = move_data_to_device(next(iter(cli.datamodule.train_dataloader())), device)
    times = {}
    for mode in ["eager", *modes]:
        module.load_state_dict(initial)
        model, task = module.model.to(device).train(), module.task.to(device)
        run = model if mode == "eager" else torch.compile(model, mode=mode)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda")
        seconds = []
        for i in range(steps + 5):  # the first steps compile and warm up
            start = time.perf_counter()
            with autocast:
                loss = task.step(run, batch, "train").loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if device == "cuda":
                torch.cuda.synchronize()
            if i >= 5:
                seconds.append(time.perf_counter() - start)
        times[mode] = statistics.median(seconds)
    return times


def profile_fit(cli) -> None:
    """Top operators and Python frames of a short fit, by self CPU time."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    print(prof.key_averages(group_by_stack_n=6).table(sort_by="self_cpu_time_total", row_limit=40))


def limits(name: str, args: argparse.Namespace) -> tuple[Optional[int], Optional[int]]:
    default = CPU_LIMITS.get(name, (None, None)) if args.device == "cpu" else (None, None)
    return args.train_batches or default[0], args.val_batches or default[1]


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    torch.manual_seed(0)
    train_batches, val_batches = limits(name, args)
    cli = build(MODELS[name], args.device, train_batches, val_batches, args.epochs + 1, args.override)
    initial = copy.deepcopy(cli.model.state_dict())
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        loop = HandLoop(cli, copy.deepcopy(cli.model), train_batches, val_batches, args.device, Path(folder))
        fit_epochs, loop_epochs, drawing = time_interleaved(cli, loop)
    row = {
        "model": name,
        "fit_s": statistics.median(fit_epochs),
        "loop_s": statistics.median(loop_epochs),
        "drawing_s": statistics.median(drawing),
        "batches": f"{train_batches or 'all'} / {val_batches or 'all'}",
        "load": (load, os.getloadavg()[0]),
        "pairs": [fit / loop for fit, loop in zip(fit_epochs, loop_epochs)],
    }
    row["ratio"] = row["fit_s"] / row["loop_s"]
    if args.device == "cuda":
        cli.model.load_state_dict(initial)
        row["kernels_per_step"], row["gpu_busy"] = gpu_activity(cli, cli.model, args.device)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_overhead", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs (one more runs first, untimed)")
    parser.add_argument(
        "--train-batches",
        type=int,
        default=None,
        help=f"training batches an epoch (default: all; on the CPU {CPU_LIMITS})",
    )
    parser.add_argument("--val-batches", type=int, default=None, help="validation batches an epoch (default: all)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--override", action="append", default=[], help="extra CLI flag for fit, repeatable")
    parser.add_argument("--profile", choices=list(MODELS), help="profile one model's fit instead of timing")
    parser.add_argument(
        "--steps",
        action="store_true",
        help="time one training step eager and compiled (reduce-overhead on CUDA) instead of epochs",
    )
    parser.add_argument(
        "--cpu-time", action="store_true", help="time by this process's CPU time instead of wall time (a busy machine)"
    )
    args = parser.parse_args()
    EpochClock.cpu_time = args.cpu_time
    if args.threads:
        torch.set_num_threads(args.threads)
    os.environ.setdefault("FRAMEWORK_RUNS_DIR", tempfile.mkdtemp(prefix="bench_overhead_"))
    if args.profile:
        profile_fit(build(MODELS[args.profile], args.device, *limits(args.profile, args), 2, args.override))
        return
    if args.steps:
        modes = ["reduce-overhead"] if args.device == "cuda" else ["default"]
        for name in args.models:
            cli = build(MODELS[name], args.device, *limits(name, args), 1, args.override)
            times = step_times(cli, cli.model, args.device, modes)
            for mode, seconds in times.items():
                print(f"step {name} {mode}: {seconds * 1e3:.2f} ms ({times['eager'] / seconds:.2f}x eager)")
        return
    rows = [measure(name, args) for name in args.models]
    clock = "process CPU time" if args.cpu_time else "wall time"
    print(
        f"\nFramework overhead on {args.device} ({torch.get_num_threads()} threads, {clock}, "
        f"median of {args.epochs} epochs each, fit and loop epochs in turns; "
        "load: the 1-minute load average before and after)"
    )
    columns = (
        "| model | batches (train / val) | fit s/epoch | loop s/epoch | fit / loop "
        "| drawing process CPU s/epoch | load |" + (" kernels/step | GPU busy |" if args.device == "cuda" else "")
    )
    print(columns)
    print("|" + "---|" * (columns.count("|") - 1))
    for row in rows:
        line = (
            f"| {row['model']} | {row['batches']} | {row['fit_s']:.3f} | {row['loop_s']:.3f} | {row['ratio']:.3f}x | "
            f"{row['drawing_s']:.2f} | {row['load'][0]:.1f}, {row['load'][1]:.1f} |"
        )
        if args.device == "cuda":
            line += f" {row['kernels_per_step']:.0f} | {row['gpu_busy']:.0%} |"
        print(line)
    for row in rows:
        print(f"{row['model']}: fit / loop of each pair of epochs: {', '.join(f'{r:.3f}' for r in row['pairs'])}")


if __name__ == "__main__":
    main()
