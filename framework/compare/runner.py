"""One run of a comparison: a ``fit`` process, then a ``test`` process on its best checkpoint.

Each run is a real command line, ``python -m framework fit <args> --seed_everything=<s>
--run_dir=<comparison>/runs/<cell>/seed<s>``, then ``python -m framework test --config
<run>/config.yaml --ckpt_path <run>/checkpoints/best.ckpt --run_dir=<run>/test``, so a crash
of one run stops no other and every run has the usual run folder. Their output goes to
``<run>/fit.log`` and ``<run>/test.log``.

What a run still needs is read from its ``summary.json`` files (see
:mod:`framework.callbacks.summary`): nothing when the fit finished and the test wrote its
metrics; the test alone when only the fit finished; a fit resumed from ``last.ckpt`` when a
fit was killed (its summary says ``running``); a fit from scratch when it failed or left no
checkpoint.

A failed stage's reason is read from its log (:func:`failure`): the framework's ``error: ...``
line, else the last line of a traceback, else how the process ended; a run stopped from outside
(Ctrl-C, SIGTERM, killed) is the only kind that running it again can fix. A :class:`Launcher`
starts the stages' processes and stops them all at once (Ctrl-C on ``compare``): SIGTERM, upon
which a fit writes a resumable ``last.ckpt`` and exits.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..callbacks.summary import read_summary
from ..runs import RUN_DIR_ENV

TEST_FOLDER = "test"
QUIET = ["--trainer.enable_progress_bar=false"]


@dataclass
class RunPlan:
    """Everything a worker (a local thread or a SLURM job) needs to do one run; plain data."""

    cell: str
    label: str
    seed: int
    run_dir: str
    fit_args: list[str]
    test_args: list[str]
    test_ckpt: str = "best"
    group: str = ""
    threads: Optional[int] = None
    gpu: Optional[str] = None         # CUDA_VISIBLE_DEVICES of the run; None leaves it as it is
    cwd: str = field(default_factory=os.getcwd)
    python: str = sys.executable

    @property
    def key(self) -> str:
        return f"{self.cell}/seed{self.seed}"


@dataclass
class RunResult:
    key: str
    ok: bool
    did: str                          # "fit+test", "test", "resume+test", "nothing"
    seconds: float = 0.0
    error: str = ""
    log: str = ""
    retry: bool = False               # a failure that running the run again can fix (it was stopped or killed)
    stopped: bool = False             # stopped by the comparison itself (Ctrl-C)


def state(run_dir: Path) -> str:
    """``done``, ``test`` (fit finished, test missing), ``resume`` (killed fit with last.ckpt) or ``fit``."""
    fit = read_summary(run_dir).get("fit", {})
    test = read_summary(run_dir / TEST_FOLDER).get("test", {})
    if fit.get("status") == "finished":
        if test.get("status") == "finished" and test.get("metrics"):
            return "done"
        return "test"
    if fit.get("status") in ("running", "interrupted") and (run_dir / "checkpoints" / "last.ckpt").is_file():
        return "resume"
    return "fit"


def environment(plan: RunPlan, stage: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(RUN_DIR_ENV, None)  # never inherit a run folder
    if plan.threads:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[name] = str(plan.threads)
    if plan.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = plan.gpu
    if plan.group:
        env["WANDB_RUN_GROUP"] = plan.group  # one W&B group per comparison
        env["WANDB_JOB_TYPE"] = stage
    return env


def fit_arguments(config_args: list[str], run_args: list[str], cell_args: list[str]) -> list[str]:
    """A cell's fit flags: its ``--grid config`` file, the comparison's arguments, no progress bar
    (unless they set it), the cell's values."""
    quiet = [] if any("enable_progress_bar" in arg for arg in run_args) else QUIET
    return [*config_args, *run_args, *quiet, *cell_args]


def _command(plan: RunPlan, stage: str, args: list[str]) -> list[str]:
    return [plan.python, "-m", "framework", stage, *args]


class Stopped(Exception):
    """The launcher was stopped: no stage starts any more."""


class Launcher:
    """Starts the stages' processes, each in its own process group (a Ctrl-C on the terminal
    reaches ``compare`` alone, which stops them once), and stops them all at once."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()

    def run(self, command: list[str], **popen: Any) -> int:
        """Run ``command`` to its end; its exit status (negative: the signal that ended it)."""
        with self._lock:
            if self.stopping.is_set():
                raise Stopped()
            process = subprocess.Popen(command, process_group=0, **popen)
            self._running.add(process)
        try:
            return process.wait()
        except BaseException:  # this process is interrupted: its child must not outlive it
            _end(process, grace=60.0)
            raise
        finally:
            with self._lock:
                self._running.discard(process)

    def stop(self) -> int:
        """No stage starts any more; the running processes get SIGTERM. How many there were."""
        with self._lock:
            self.stopping.set()
            running = list(self._running)
        for process in running:
            _signal(process, signal.SIGTERM)
        return len(running)

    def kill(self) -> None:
        with self._lock:
            running = list(self._running)
        for process in running:
            _signal(process, signal.SIGKILL)


def _signal(process: subprocess.Popen, number: int) -> None:
    try:
        process.send_signal(number)
    except (ProcessLookupError, OSError):  # it ended meanwhile
        pass


def _end(process: subprocess.Popen, grace: float) -> None:
    _signal(process, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        _signal(process, signal.SIGKILL)
        process.wait()


#: The last line of a Python traceback: the exception and its message.
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b(:|$)")


def failure(stage: str, code: int, output: str) -> tuple[str, bool]:
    """Why a stage that ended with exit status ``code`` failed, from its ``output``, and whether
    running it again can fix that (only when it was stopped or killed from outside)."""
    if code < 0 or code in (128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGKILL):
        number = -code if code < 0 else code - 128
        return f"{stage} stopped by {signal.Signals(number).name}", True
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("error:")]
    if said:
        return f"{stage}: {said[-1].removeprefix('error:').strip()}"[:500], False
    if "Traceback (most recent call last):" in lines:
        after = lines[len(lines) - 1 - lines[::-1].index("Traceback (most recent call last):"):]
        raised = [line for line in after if EXCEPTION_LINE.match(line)]
        if raised:
            return f"{stage}: {raised[-1]}"[:500], raised[-1].startswith("KeyboardInterrupt")
    return f"{stage} exit status {code}: {lines[-1][-300:] if lines else 'no output'}", False


def _run_stage(plan: RunPlan, stage: str, args: list[str], log: Path, launcher: Launcher) -> Optional[tuple[str, bool]]:
    """Run one stage as a process, its output appended to ``log``; None, or why it failed and
    whether a rerun can fix it (see :func:`failure`)."""
    command = _command(plan, stage, args)
    with open(log, "a") as out:
        start = out.tell()
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        code = launcher.run(command, cwd=plan.cwd, env=environment(plan, stage), stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    if code == 0:
        return None
    with open(log, errors="replace") as written:
        written.seek(start)
        return failure(stage, code, written.read())


def fit_args(plan: RunPlan, resume: bool) -> list[str]:
    run_dir = Path(plan.run_dir)
    args = [*plan.fit_args, f"--seed_everything={plan.seed}", f"--run_dir={run_dir}"]
    if resume:
        args += ["--ckpt_path", str(run_dir / "checkpoints" / "last.ckpt")]
    return args


def test_args(plan: RunPlan) -> list[str]:
    run_dir = Path(plan.run_dir)
    fit = read_summary(run_dir).get("fit", {})
    best, last = fit.get("best_checkpoint"), fit.get("last_checkpoint")
    ckpt = (best if plan.test_ckpt == "best" else last) or best or last
    if not ckpt or not Path(ckpt).is_file():
        ckpt = str(run_dir / "checkpoints" / ("best.ckpt" if plan.test_ckpt == "best" else "last.ckpt"))
    return ["--config", str(run_dir / "config.yaml"), *QUIET, *plan.test_args, "--ckpt_path", ckpt,
            f"--run_dir={run_dir / TEST_FOLDER}"]


def execute(plan: RunPlan, launcher: Optional[Launcher] = None) -> RunResult:
    """Do what the run still needs (see the module's docstring); never raises for a failed run.
    A run that ``launcher`` was asked to stop ends with ``stopped`` set."""
    launcher = launcher or Launcher()
    start = time.perf_counter()
    run_dir = Path(plan.run_dir)
    todo = state(run_dir)
    if todo == "done":
        return RunResult(plan.key, True, "nothing")
    did: list[str] = []

    def failed(why: tuple[str, bool], log: str) -> RunResult:
        stopped = launcher.stopping.is_set()
        return RunResult(plan.key, False, "+".join(did), time.perf_counter() - start, why[0],
                         str(run_dir / log) if log else "", retry=why[1] or stopped, stopped=stopped)

    try:
        if launcher.stopping.is_set():
            raise Stopped()
        if todo == "fit" and run_dir.exists():  # a failed or empty attempt: start again
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        if todo in ("fit", "resume"):
            did.append("resume" if todo == "resume" else "fit")
            why = _run_stage(plan, "fit", fit_args(plan, todo == "resume"), run_dir / "fit.log", launcher)
            if why is None and read_summary(run_dir).get("fit", {}).get("status") != "finished":
                why = ("fit ended without a finished summary.json", True)
            if why:
                return failed(why, "fit.log")
        shutil.rmtree(run_dir / TEST_FOLDER, ignore_errors=True)
        did.append("test")
        why = _run_stage(plan, "test", test_args(plan), run_dir / "test.log", launcher)
        if why is None and not read_summary(run_dir / TEST_FOLDER).get("test", {}).get("metrics"):
            why = ("test ended without test metrics in summary.json", True)
        return failed(why, "test.log") if why else RunResult(plan.key, True, "+".join(did), time.perf_counter() - start)
    except Stopped:
        return failed((f"stopped before its {did[-1]}" if len(did) > 1 else "stopped before it started", True), "")


def execute_dict(plan: dict) -> dict:
    """:func:`execute` on plain data (what a submitit job pickles)."""
    return asdict(execute(RunPlan(**plan)))
