"""Where the runs of a comparison execute.

* ``local`` (the default): ``--jobs`` warm workers on this machine (:class:`~.pool.Pool`), each
  taking runs one after another. On a machine with GPUs a slot is a GPU (``CUDA_VISIBLE_DEVICES``
  set per worker; ``--jobs`` defaults to the number of free GPUs); on a CPU machine a slot is a
  worker. Each run's torch threads (``OMP_NUM_THREADS`` in its worker) are ``--threads``, else the
  ``OMP_NUM_THREADS`` the user exported, else ``cores // jobs`` (:func:`threads_per_run`).
* ``submitit``: a job array through `submitit <https://github.com/facebookincubator/submitit>`_,
  one job per run (:class:`Job`): SLURM where ``sbatch`` exists, else submitit's local executor;
  ``--submitit KEY=VALUE`` flags go to ``AutoExecutor.update_parameters`` (``timeout_min=120``,
  ``slurm_partition=gpu``, ``gpus_per_node=1``, ``cpus_per_task=8`` ...), and ``cluster=local``,
  ``slurm`` or ``debug`` chooses the executor. ``--jobs`` caps the jobs running at once. A job
  that is preempted or runs out of time (submitit's signal, SIGUSR2) stops its run as SIGTERM
  does (a fit writes ``last.ckpt``) and is requeued; the requeued job resumes the run.

Both tell a watcher (:class:`~.progress.GridProgress`) when a run starts and ends. Ctrl-C or
SIGTERM (:mod:`framework.signals`) stops the grid: no run starts any more, the running ones are
stopped (local workers get SIGTERM and a fit writes a resumable ``last.ckpt``; submitit jobs are
cancelled), and :class:`GridStopped` carries the results of the runs that ended. A second signal
kills the local workers without waiting for their checkpoints.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Optional, Protocol

import submitit
import yaml
from submitit.core.job_environment import JobEnvironment
from submitit.helpers import Checkpointable

from ... import signals
from ...errors import ConfigError
from ...values import PositiveInt
from .pool import Pool
from .runner import RunPlan, RunResult, execute


class Watcher(Protocol):
    def at_once(self, runs: int) -> None: ...

    def started(self, plan: RunPlan) -> None: ...

    def finished(self, plan: RunPlan, result: RunResult) -> None: ...


class GridStopped(Exception):
    """A signal stopped the grid; ``results`` are those of the runs that ended (done, failed or stopped)."""

    def __init__(self, results: list[RunResult]) -> None:
        super().__init__(f"stopped after {len(results)} run(s)")
        self.results = results


#: A GPU whose memory is more used than this is busy (another user's job).
BUSY_FRACTION = 0.1


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def free_gpus() -> list[str]:
    """Indices of the GPUs this process may use whose memory is (almost) unused."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.used,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.strip().splitlines():
        try:
            index, used, total = (part.strip() for part in line.split(","))
            if float(used) <= BUSY_FRACTION * float(total):
                gpus.append(index)
        except ValueError:
            continue
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        allowed = [v.strip() for v in visible.split(",") if v.strip()]
        gpus = [g for g in gpus if g in allowed]
    return gpus


#: The environment variable whose value, where the user exported it, is every run's thread count.
THREADS_ENV = "OMP_NUM_THREADS"


def threads_per_run(jobs: int, given: Optional[int] = None) -> int:
    """A run's torch threads when ``jobs`` run at once: ``given`` (``--threads``), else the
    ``OMP_NUM_THREADS`` the user exported, else the cores shared out, ``cores // jobs``.

    Under load more threads can be slower (two threads made a graph epoch 4.5x slower than one
    on a busy 2-core machine): what the user chose is never overridden."""
    if given:
        return given
    exported = os.environ.get(THREADS_ENV, "").strip()
    if exported:
        try:
            return PositiveInt.check(exported)
        except ValueError as err:
            said = f"{THREADS_ENV}={exported!r}: {err} (or unset it; --threads N sets a run's threads)"
            raise ConfigError(said) from None
    return max(1, cpu_count() // max(1, jobs))


def local_slots(jobs: Optional[int], threads: Optional[int] = None) -> tuple[list[Optional[str]], int]:
    """The slots of the local executor (a GPU index each, or None on a CPU) and threads per run
    (``threads``, the ``--threads`` flag, or as :func:`threads_per_run` says)."""
    gpus = free_gpus()
    if gpus:
        jobs = jobs or len(gpus)
        slots: list[Optional[str]] = [gpus[i % len(gpus)] for i in range(jobs)]
    else:
        jobs = jobs or 1
        slots = [None] * jobs
    return slots, threads_per_run(jobs, threads)


def run_local(
    plans: list[RunPlan], jobs: Optional[int], watcher: Watcher, threads: Optional[int] = None
) -> list[RunResult]:
    """Run the plans on ``jobs`` warm local workers (``threads`` each, see :func:`local_slots`);
    results in the order the runs end."""
    slots, threads = local_slots(jobs, threads)
    slots = slots[: max(1, len(plans))]
    gpus = ",".join(sorted({slot for slot in slots if slot is not None}))
    where = f" on GPU {gpus}" if gpus else ""
    print(f"{len(slots)} warm worker(s){where}, {threads} torch thread(s) a run (--threads sets it)", flush=True)
    watcher.at_once(len(slots))
    results: list[RunResult] = []
    with Pool(slots, threads) as pool:
        futures = {pool.submit(plan, watcher.started): plan for plan in plans}
        pending = set(futures)

        def collect() -> None:
            for future in concurrent.futures.as_completed(list(pending)):
                pending.discard(future)
                if not future.cancelled():
                    result = future.result()
                    watcher.finished(futures[future], result)
                    results.append(result)

        try:
            collect()
        except signals.Stopped:
            for future in futures:
                future.cancel()
            running = pool.stop()
            print(
                f"\nstopping the comparison: {running} running run(s) got SIGTERM and save a resumable "
                "last.ckpt (a second Ctrl-C or SIGTERM kills them now)",
                file=sys.stderr,
                flush=True,
            )
            while pending:
                try:
                    collect()
                except signals.Stopped:
                    pool.kill()
            raise GridStopped(results) from None
    return results


class Job(Checkpointable):
    """A submitit job: one run (:func:`.runner.execute`, in the job's process), requeued when
    preempted or out of time.

    submitit announces those with a signal (SIGUSR2; ``#SBATCH --signal=USR2@90`` on SLURM) and
    then calls :meth:`checkpoint` and requeues the job. Here that signal first stops the run as
    SIGTERM does (Lightning finishes the step, a fit writes ``last.ckpt`` and ends); then
    submitit's own handler checkpoints (this job and its plan, unchanged: the run's folder says
    what is left) and requeues, and the requeued job resumes the fit from ``last.ckpt``.
    """

    def __call__(self, plan: dict) -> dict:
        preemption = JobEnvironment._usr_sig()
        submitit_handler = signal.getsignal(preemption)
        told: list[int] = []

        def stop_the_run(signum: int, frame: object) -> None:
            told.append(signum)
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(preemption, stop_the_run)
        try:
            result = execute(RunPlan(**plan))
        finally:
            signal.signal(preemption, submitit_handler)
        if told and callable(submitit_handler):  # checkpoint and requeue (exits this job)
            submitit_handler(told[0], None)
        return asdict(result)


def submitit_parameters(flags: Iterable[str]) -> dict:
    parameters = {}
    for flag in flags:
        key, sep, value = flag.partition("=")
        if not sep or not key:
            raise ConfigError(f"--submitit {flag}: expected KEY=VALUE, for example --submitit timeout_min=120")
        parameters[key.strip()] = yaml.safe_load(value)
    return parameters


def run_submitit(
    plans: list[RunPlan],
    folder: Path,
    jobs: Optional[int],
    flags: list[str],
    watcher: Watcher,
    threads: Optional[int] = None,
) -> list[RunResult]:
    """One job per run in a submitit job array (SLURM, or submitit's local executor); ``threads``
    (``--threads``) a run, else as :func:`threads_per_run` says locally, else the job's cpus_per_task."""
    parameters = submitit_parameters(flags)
    cluster = parameters.pop("cluster", None)
    executor = submitit.AutoExecutor(folder=folder / "submitit" / "%j", cluster=cluster)
    parameters.setdefault("timeout_min", 24 * 60)
    parameters.setdefault("name", folder.name)
    if jobs:
        parameters.setdefault("slurm_array_parallelism", jobs)
    cpus = parameters.get("cpus_per_task") or parameters.get("slurm_cpus_per_task")
    if executor.cluster == "local":
        parameters.pop("slurm_array_parallelism", None)
        parameters = {k: v for k, v in parameters.items() if not k.startswith("slurm_")}
        threads = threads_per_run(min(jobs or len(plans), len(plans)), threads)
    else:
        threads = threads or (int(cpus) if cpus else None)
    try:
        executor.update_parameters(**parameters)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"--submitit: {err}") from None
    for plan in plans:
        plan.threads = plan.threads or threads
    if executor.cluster == "local":  # submitit's local executor starts every job at once: keep `jobs` going
        watcher.at_once(min(jobs or len(plans), len(plans)))
        return _rolling(executor, plans, jobs or len(plans), folder, watcher)
    submitted = executor.map_array(Job(), [asdict(plan) for plan in plans])
    print(
        f"submitted a job array of {len(submitted)} job(s) to {executor.cluster} (first id {submitted[0].job_id}); "
        f"their files are in {folder / 'submitit'}",
        flush=True,
    )
    results = []
    try:
        for plan, job in zip(plans, submitted):
            result = _result(plan, job, folder)
            watcher.finished(plan, result)
            results.append(result)
    except signals.Stopped:
        _cancel(submitted)
        raise GridStopped(results) from None
    return results


def _cancel(jobs: list) -> None:
    """Cancel submitit jobs (SLURM sends them SIGTERM: a fit writes a resumable last.ckpt)."""
    for job in jobs:
        if not job.done():
            job.cancel(check=False)
    print(f"\nstopping the comparison: cancelled the unfinished job(s) of {len(jobs)}", file=sys.stderr, flush=True)


def _result(plan: RunPlan, job, folder: Path) -> RunResult:
    try:
        return RunResult(**job.result())
    except Exception as err:  # the job itself died (timeout, node failure, cancelled)
        lines = str(err).strip().splitlines() or [""]
        return RunResult(
            plan.key,
            False,
            "job",
            error=f"{type(err).__name__}: {lines[-1][:300]}",
            log=str(folder / "submitit" / str(job.job_id)),
            retry=True,
        )


def _rolling(executor, plans: list[RunPlan], jobs: int, folder: Path, watcher: Watcher) -> list[RunResult]:
    pending, active, results = list(plans), [], []
    try:
        while pending or active:
            while pending and len(active) < jobs:
                plan = pending.pop(0)
                active.append((plan, executor.submit(Job(), asdict(plan))))
                watcher.started(plan)
            time.sleep(0.5)
            for plan, job in [item for item in active if item[1].done()]:
                active.remove((plan, job))
                result = _result(plan, job, folder)
                watcher.finished(plan, result)
                results.append(result)
    except signals.Stopped:
        _cancel([job for _, job in active])
        raise GridStopped(results) from None
    return results
