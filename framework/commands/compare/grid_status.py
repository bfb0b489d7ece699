"""The live status of a comparison's grid, and the line of each run that ends.

    2/6 runs done (1 failed) · running: mhsa seed 1 epoch 3/10, none seed 1 test · ETA 4 min

The epoch of a running fit is read from its run folder's ``summary.json`` (rewritten after
every validation), never from the process. The ETA is when the last run would end were the
runs not started handed, one after the other, to the slot that frees first: the executor's
slots (:meth:`GridProgress.at_once`), else as many as the runs seen running at once. A running
fit needs its seconds per epoch so far (since it started or resumed) times the epochs it lacks
(before its first validation: the median duration of the finished fits less its time so far),
a run not started the median duration of the finished fits, else the mean projected duration
of the running ones.

The epochs a fit is expected to train are its ``max_epochs``, unless it stops early
(:class:`Stopping`, its config's early stopping): then the median epochs of the finished fits
that stopped so (of its cell where there are some), never fewer than the earliest it can still
stop, its monitored metric's last improvement plus the patience, and never more than
``max_epochs``. Before any fit finished, that earliest stop is the estimate: a grid whose
``max_epochs`` is a ceiling (1000 epochs, patience 100) is not projected to run to it.
"""

from __future__ import annotations

import heapq
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ...runs import read_summary
from ..status_line import StatusLine, duration
from .runner import TEST_FOLDER, RunPlan, RunResult, state

#: Running runs named in the status line (the others are counted).
NAMED = 3
#: Lightning's EarlyStopping's default patience, for a callback that sets none.
DEFAULT_PATIENCE = 3


@dataclass(frozen=True)
class Stopping:
    """A fit's early stopping: its ``patience`` (validations without improvement) and the metric
    it watches (None: the checkpoint's)."""

    patience: int
    monitor: Optional[str] = None

    @classmethod
    def of(cls, config: dict[str, Any]) -> Optional[Stopping]:
        """The early stopping a resolved config declares: its ``early_stopping`` section when its
        patience is set, else an ``EarlyStopping`` among the trainer's callbacks; None without."""
        section = config.get("early_stopping") or {}
        if section.get("patience") is not None:
            return cls(int(section["patience"]), section.get("monitor"))
        callbacks = (config.get("trainer") or {}).get("callbacks") or []
        for callback in callbacks if isinstance(callbacks, list) else [callbacks]:
            if isinstance(callback, dict) and str(callback.get("class_path", "")).endswith("EarlyStopping"):
                init = callback.get("init_args") or {}
                return cls(int(init.get("patience", DEFAULT_PATIENCE)), init.get("monitor"))
        return None

    def earliest_end(self, fit: dict[str, Any]) -> Optional[int]:
        """The fewest epochs the running fit (its ``summary.json`` section) can train: its metric's
        last improvement, plus the patience; None before its first validation."""
        monitor = self.monitor or fit.get("monitor")
        history = [entry for entry in fit.get("history") or [] if monitor in entry]
        if not history:
            return None
        higher = (fit.get("directions") or {}).get(monitor, fit.get("mode")) == "max"
        values = [entry[monitor] * (1 if higher else -1) for entry in history]
        best = max(range(len(values)), key=lambda i: (values[i], -i))  # the first of equal bests
        return int(history[best].get("epoch", best)) + 1 + self.patience


class GridProgress:
    """Of ``total`` runs, told when each run starts (:meth:`started`, from any thread) and ends (:meth:`finished`);
    shows :meth:`describe` as a :class:`~framework.commands.status_line.StatusLine`, every ``every`` seconds
    as a plain line when stdout is no terminal (0: never)."""

    def __init__(
        self,
        total: int,
        max_epochs: Optional[dict[str, Optional[int]]] = None,
        every: float = 30.0,
        stopping: Optional[dict[str, Optional[Stopping]]] = None,
    ) -> None:
        self.total, self.max_epochs, self.stopping = total, max_epochs or {}, stopping or {}
        self.done = self.failed = self.pruned = self.peak = 0
        self.slots: Optional[int] = None  # runs at once, as the executor says (at_once)
        self.fits: list[float] = []  # seconds of the finished fit+test runs
        self.fit_epochs: dict[str, list[int]] = {}  # by cell: epochs the finished fits trained
        self.running: dict[str, tuple[RunPlan, float, int]] = {}  # key: plan, start, epochs done at its start
        self._lock = threading.Lock()
        self.line = StatusLine(self.describe, self.total, every)

    def at_once(self, runs: int) -> None:
        """The executor runs ``runs`` at a time. Without it the ETA takes the most runs seen
        running at once, which overstates them where a worker starts its next run before the
        end of its last one is told (a local pool's worker thread, ahead of the main thread)."""
        self.slots = max(1, runs)

    def started(self, plan: RunPlan) -> None:
        first = (_epochs(plan) or 0) if state(Path(plan.run_dir)) == "resume" else 0
        with self._lock:
            self.running[plan.key] = (plan, time.monotonic(), first)
            self.peak = max(self.peak, len(self.running))

    def finished(self, plan: RunPlan, result: RunResult) -> None:
        with self._lock:
            self.running.pop(plan.key, None)
            if not result.stopped:  # a stopped run is not done: the next invocation resumes it
                self.done += 1
                self.failed += not result.ok and not result.pruned  # a pruned trial is an outcome
                self.pruned += result.pruned
            if result.ok and result.did.startswith("fit"):
                self.fits.append(result.seconds)
            if result.ok and result.did != "nothing":
                epochs = read_summary(Path(plan.run_dir)).get("fit", {}).get("epochs")
                if isinstance(epochs, int):
                    self.fit_epochs.setdefault(plan.cell, []).append(epochs)
            done = self.done
        if result.stopped:
            self.line.print(f"{plan.label} seed {plan.seed}: {result.error}; the same command resumes it")
            return
        self.line.advance()
        self.line.print(run_line(plan, result, done, self.total))

    def close(self) -> None:
        self.line.close()

    def __enter__(self) -> GridProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        now = time.monotonic()
        with self._lock:
            running = list(self.running.values())
            done, failed, pruned = self.done, self.failed, self.pruned
        epochs = {plan.key: _epochs(plan) for plan, *_ in running}
        names = [f"{plan.label} seed {plan.seed} {self._stage(plan, epochs[plan.key])}" for plan, *_ in running[:NAMED]]
        ended = ", ".join(f"{n} {what}" for n, what in ((failed, "failed"), (pruned, "pruned")) if n)
        parts = [f"{done}/{self.total} runs done" + (f" ({ended})" if ended else "")]
        if running:
            parts.append(
                "running: " + ", ".join(names) + (f" +{len(running) - NAMED} more" if len(running) > NAMED else "")
            )
        eta = self.eta(now, running, epochs)
        parts.append(f"ETA {duration(eta)}" if eta is not None else "ETA after the first epoch")
        return " · ".join(parts)

    def _stage(self, plan: RunPlan, epochs: Optional[int]) -> str:
        if epochs is None:
            return "test"
        most = self.max_epochs.get(plan.cell)
        return f"epoch {min(epochs + 1, most)}/{most}" if most else f"epoch {epochs + 1}"

    def eta(
        self, now: float, running: list[tuple[RunPlan, float, int]], epochs: dict[str, Optional[int]]
    ) -> Optional[float]:
        """Seconds until the grid is done (see the module's docstring); None before it can tell."""
        queued = self.total - self.done - len(running)
        typical = statistics.median(self.fits) if self.fits else None
        left, projected = [], []  # seconds each running run lacks; the running fits' projected durations
        for plan, since, first in running:
            elapsed, done = now - since, epochs[plan.key]
            if done is None:  # its fit finished: the test is a few seconds
                continue
            most = self.expected_epochs(plan, done)
            if most and done > first:
                per_epoch = elapsed / (done - first)
                left.append(per_epoch * (most - done))
                projected.append(per_epoch * most)
            elif typical is not None:
                left.append(max(typical - elapsed, 0.0))
            else:
                return None
        per_run = typical if typical is not None else statistics.fmean(projected) if projected else None
        if per_run is None and queued:
            return None
        slots = left + [0.0] * max(0, (self.slots or max(1, self.peak)) - len(left))
        heapq.heapify(slots)
        for _ in range(queued):  # each run not started goes to the slot that frees first
            heapq.heapreplace(slots, slots[0] + per_run)
        return max(slots, default=0.0)

    def expected_epochs(self, plan: RunPlan, done: int) -> Optional[int]:
        """The epochs a running fit is expected to train in all (see the module's docstring); None
        when neither its ``max_epochs`` nor its early stopping tells."""
        most, stopping = self.max_epochs.get(plan.cell), self.stopping.get(plan.cell)
        if stopping is None:
            return most
        earliest = stopping.earliest_end(read_summary(Path(plan.run_dir)).get("fit", {}))
        finished = self.fit_epochs.get(plan.cell) or [n for ns in self.fit_epochs.values() for n in ns]
        guesses = [n for n in (earliest, statistics.median(finished) if finished else None) if n is not None]
        if not guesses:
            return most
        expected = max(max(guesses), done)
        return min(expected, most) if most else round(expected)


def _epochs(plan: RunPlan) -> Optional[int]:
    """Training epochs a running run's fit completed, by its last validation (None once its fit
    finished: it is testing)."""
    fit = read_summary(Path(plan.run_dir)).get("fit", {})
    if fit.get("status") == "finished":
        return None
    history = fit.get("history") or [{"epoch": -1}]
    return int(history[-1].get("epoch", -1)) + 1


def run_line(plan: RunPlan, result: RunResult, done: int, total: int) -> str:
    """``[3/8] mhsa seed 1: fit+test in 41 s, test/acc 0.9120``, that a search's pruner stopped it
    (``pruned: ...``), or why it failed."""
    head = f"[{done}/{total}] {plan.label} seed {plan.seed}"
    if result.pruned:  # the pruner's word: "Trial was pruned at epoch 3."
        said = result.error.removeprefix("pruned:").strip().rstrip(".")
        return f"{head}: pruned after {result.seconds:.0f} s" + (f" ({said})" if said else "")
    if not result.ok:
        return f"{head}: FAILED: {result.error}" + (f"; log: {result.log}" if result.log else "")
    test = read_summary(Path(plan.run_dir) / TEST_FOLDER).get("test", {}).get("metrics", {})
    monitor = read_summary(Path(plan.run_dir)).get("fit", {}).get("monitor") or ""
    key = (
        f"test/{monitor[4:]}"
        if monitor.startswith("val/") and f"test/{monitor[4:]}" in test
        else next(iter(test), None)
    )
    return f"{head}: {result.did} in {result.seconds:.0f} s" + (f", {key} {test[key]:.4f}" if key else "")
