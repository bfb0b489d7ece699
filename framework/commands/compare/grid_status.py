"""The live status of a comparison's grid, and the line of each run that ends.

    2/6 runs done (1 failed) · running: mhsa seed 1 epoch 3/10, none seed 1 test · ETA 4 min

The epoch of a running fit is read from its run folder's ``summary.json`` (rewritten after
every validation), never from the process. The ETA is the work left over the runs seen
running at once: a running fit needs its seconds per epoch so far (since it started or
resumed) times the epochs it lacks (before its first validation: the median duration of the
finished fits less its time so far), a run not started the median duration of the finished
fits, else the mean projected duration of the running ones.
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Optional

from ...runs import read_summary
from ..status_line import StatusLine, duration
from .runner import TEST_FOLDER, RunPlan, RunResult, state

#: Running runs named in the status line (the others are counted).
NAMED = 3


class GridProgress:
    """Of ``total`` runs, told when each run starts (:meth:`started`, from any thread) and ends (:meth:`finished`);
    shows :meth:`describe` as a :class:`~framework.commands.status_line.StatusLine`, every ``every`` seconds
    as a plain line when stdout is no terminal (0: never)."""

    def __init__(self, total: int, max_epochs: Optional[dict[str, Optional[int]]] = None, every: float = 30.0) -> None:
        self.total, self.max_epochs = total, max_epochs or {}
        self.done = self.failed = self.peak = 0
        self.fits: list[float] = []  # seconds of the finished fit+test runs
        self.running: dict[str, tuple[RunPlan, float, int]] = {}  # key: plan, start, epochs done at its start
        self._lock = threading.Lock()
        self.line = StatusLine(self.describe, self.total, every)

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
                self.failed += not result.ok
            if result.ok and result.did.startswith("fit"):
                self.fits.append(result.seconds)
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
            done, failed = self.done, self.failed
        epochs = {plan.key: _epochs(plan) for plan, *_ in running}
        names = [f"{plan.label} seed {plan.seed} {self._stage(plan, epochs[plan.key])}" for plan, *_ in running[:NAMED]]
        parts = [f"{done}/{self.total} runs done" + (f" ({failed} failed)" if failed else "")]
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
        left, projected = 0.0, []
        for plan, since, first in running:
            elapsed, done, most = now - since, epochs[plan.key], self.max_epochs.get(plan.cell)
            if done is None:  # its fit finished: the test is a few seconds
                continue
            if most and done > first:
                per_epoch = elapsed / (done - first)
                left += per_epoch * (most - done)
                projected.append(per_epoch * most)
            elif typical is not None:
                left += max(typical - elapsed, 0.0)
            else:
                return None
        per_run = typical if typical is not None else statistics.fmean(projected) if projected else None
        if per_run is None:
            return None if queued else left / max(1, self.peak)
        return (left + queued * per_run) / max(1, self.peak)


def _epochs(plan: RunPlan) -> Optional[int]:
    """Training epochs a running run's fit completed, by its last validation (None once its fit
    finished: it is testing)."""
    fit = read_summary(Path(plan.run_dir)).get("fit", {})
    if fit.get("status") == "finished":
        return None
    history = fit.get("history") or [{"epoch": -1}]
    return int(history[-1].get("epoch", -1)) + 1


def run_line(plan: RunPlan, result: RunResult, done: int, total: int) -> str:
    """``[3/8] mhsa seed 1: fit+test in 41 s, test/acc 0.9120``, or why it failed."""
    head = f"[{done}/{total}] {plan.label} seed {plan.seed}"
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
