"""A pool of warm workers (:mod:`.worker`): one process per slot (a GPU, or a share of the
CPU's threads) that imports the libraries once and takes runs one after another.

    with Pool([None, None], threads=1) as pool:
        future = pool.submit(plan)            # a concurrent.futures.Future of a RunResult
        result = future.result()

Crash isolation as with a process per run: a run that fails is its worker's answer, and the
worker goes on; a worker that dies during a run (a segfault, kill -9, the OOM killer) fails
that run alone, with the reason read from the stage's log and the signal that ended it, and
the slot starts a new worker for its next run. :meth:`Pool.stop` (``compare`` stopped by Ctrl-C
or SIGTERM, or the pool left on an error) lets no run start any more and sends the running
workers SIGTERM (a fit writes a resumable ``last.ckpt``); :meth:`Pool.kill` ends them at once.

A worker is a :class:`~framework.warm_process.WarmProcess` in a process group of its own (Ctrl-C
at the terminal reaches the pool, which stops the runs itself): a run goes to it as one frame of
JSON, its answers come back as frames of JSON (see :mod:`.worker`), and the end of its answers
without a result is its death, whose exit status and the stage's log say why.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import queue
import signal
import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Optional

from ...runs import RUN_DIR_ENV
from ...warm_process import WarmProcess
from .runner import RunPlan, RunResult, failure

#: Seconds a worker has to end after its stdin closes before it is killed.
GRACE = 60.0


def worker_environment(gpu: Optional[str], threads: Optional[int]) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(RUN_DIR_ENV, None)  # never inherit a run folder
    env.pop("WANDB_SERVICE", None)  # nor this process's W&B service, where a killed worker's run would stay open
    if threads:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[name] = str(threads)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


class Worker:
    """One warm process of a slot; started at once, and again after it died."""

    def __init__(self, gpu: Optional[str], threads: Optional[int]) -> None:
        self.gpu, self.threads = gpu, threads
        self.process: Optional[WarmProcess] = None
        self.busy = False
        self.start()

    def start(self) -> None:
        self.process = WarmProcess(
            "framework.commands.compare.worker",
            env=worker_environment(self.gpu, self.threads),
            own_group=True,
            name="compare-worker",
        ).start()

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def run(self, plan: RunPlan) -> RunResult:
        """Hand ``plan`` to the worker and wait for its result (a crash's result when it dies)."""
        if not self.alive():
            self.close()
            self.start()
        plan.threads = plan.threads or self.threads
        stage, log, offset = "", "", 0
        self.process.send(json.dumps(asdict(plan)).encode())
        while (answer := self.process.receive()) is not None:  # None: it died before or while answering
            message = json.loads(answer)
            if "result" in message:
                return RunResult(**message["result"])
            stage, log, offset = message["stage"], message["log"], message["offset"]
        code = self.process.wait()
        why, retry = failure(stage or "worker", code, read_from(log, offset) if log else "")
        return RunResult(plan.key, False, stage, error=why, log=log, retry=retry)

    def signal(self, number: int) -> None:
        if self.process is not None:
            self.process.signal(number)

    def close(self, grace: float = GRACE) -> None:
        """Close its input (it ends after its run) and wait for it, killing it after ``grace`` seconds."""
        if self.process is None:
            return
        self.process.close(grace)
        self.process = None


class Pool:
    """Warm workers, one per slot (``slots``: a GPU index each, or None for a CPU slot with
    ``threads`` threads); :meth:`submit` queues a run for the next free worker."""

    def __init__(self, slots: list[Optional[str]], threads: Optional[int]) -> None:
        self.workers = [Worker(gpu, threads) for gpu in slots]
        self.free: queue.Queue[Worker] = queue.Queue()
        for worker in self.workers:
            self.free.put(worker)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads = concurrent.futures.ThreadPoolExecutor(len(self.workers))

    def submit(
        self, plan: RunPlan, started: Callable[[RunPlan], None] = lambda plan: None
    ) -> concurrent.futures.Future[RunResult]:
        """The run's future result; ``started(plan)`` is called when a worker takes it."""
        return self._threads.submit(self._work, plan, started)

    def _work(self, plan: RunPlan, started: Callable[[RunPlan], None]) -> RunResult:
        worker = self.free.get()
        try:
            with self._lock:
                if self.stopping.is_set():
                    return RunResult(plan.key, False, "", error="stopped before it started", retry=True, stopped=True)
                worker.busy = True
            started(plan)
            result = worker.run(plan)
            if self.stopping.is_set() and not result.ok:
                result.stopped = result.retry = True
            return result
        finally:
            worker.busy = False
            self.free.put(worker)

    def stop(self) -> int:
        """No run starts any more; the running workers get SIGTERM. How many there were."""
        with self._lock:
            self.stopping.set()
            running = [w for w in self.workers if w.busy]
        for worker in running:
            worker.signal(signal.SIGTERM)
        return len(running)

    def kill(self) -> None:
        for worker in self.workers:
            if worker.busy:
                worker.signal(signal.SIGKILL)

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        for worker in self.workers:
            worker.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:  # left on an error or a stop (Ctrl-C, SIGTERM): the running runs stop, not run on
            self.stop()
        self.close()


def read_from(path: str, offset: int) -> str:
    try:
        with open(path, errors="replace") as written:
            written.seek(offset)
            return written.read()
    except OSError:
        return ""
