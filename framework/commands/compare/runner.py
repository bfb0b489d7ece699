"""One run of a comparison: a ``fit``, then a ``test`` of its best checkpoint, in this process.

A run is two command lines of the CLI, called in-process (:func:`framework.commands.fit.main`)
by a warm worker (:mod:`.worker`), a submitit job or a W&B sweep agent: ``fit <args>
--seed_everything=<s> --run_dir=<comparison>/runs/<cell>/seed<s>``, then ``test --config
<run>/config.yaml --ckpt_path <run>/checkpoints/best.ckpt --run_dir=<run>/test``. Each stage's
output (the process's file descriptors 1 and 2, so libraries' and crashes' output too) goes to
``<run>/fit.log`` and ``<run>/test.log``, each attempt after a ``$ python -m framework ...`` line.

What a run still needs is read from its ``summary.json`` files (see
:mod:`framework.callbacks.run_summary`): nothing when the fit finished and the test wrote its
metrics; the test alone when only the fit finished; a fit resumed from ``last.ckpt`` when a
fit was stopped or killed (its summary says ``running`` or ``interrupted``); a fit from scratch
when it failed or left no checkpoint.

Runs that share a process must not share state: :func:`isolated` gives each stage the
environment, working folder, thread count and torch flags it would have in a fresh process,
and afterwards closes W&B, frees the run folder's lock and resets the peak-memory counters
(``summary.json``'s ``peak_memory_mb`` is the run's own); seeds are the CLI's
``seed_everything``. A run done after others in one worker ends exactly like the same run in a
fresh process (tests/test_compare_pool.py).

A failed stage's reason is read from its log (:func:`failure`): the framework's ``error: ...``
line, else the last line of a traceback, else how the process ended; a run stopped from outside
(Ctrl-C, SIGTERM, killed) is the only kind that running it again can fix.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import shlex
import shutil
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ...runs import RUN_DIR_ENV, read_summary

TEST_FOLDER = "test"
QUIET = ["--trainer.enable_progress_bar=false"]
#: Signals that stop a run from outside (Ctrl-C, SLURM or a user's kill, the OOM killer): a rerun resumes it.
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL, signal.SIGHUP)


@dataclass
class RunPlan:
    """Everything a worker (a warm process, a SLURM job, a sweep agent) needs to do one run; plain data."""

    cell: str
    label: str
    seed: int
    run_dir: str
    fit_args: list[str]
    test_args: list[str]
    test_ckpt: str = "best"
    group: str = ""
    threads: Optional[int] = None  # torch threads of the run; None leaves them as they are
    cwd: str = field(default_factory=os.getcwd)
    pruning: Optional[dict] = None  # an Optuna trial that prunes this fit (see .search.pruning_callback)

    @property
    def key(self) -> str:
        return f"{self.cell}/seed{self.seed}"


@dataclass
class RunResult:
    key: str
    ok: bool
    did: str  # "fit+test", "test", "resume+test", "nothing"
    seconds: float = 0.0
    error: str = ""
    log: str = ""
    retry: bool = False  # a failure that running the run again can fix (it was stopped or killed)
    stopped: bool = False  # stopped by the comparison itself (Ctrl-C)
    pruned: bool = False  # stopped early by a search's pruner (a finished outcome, not a failure)


def state(run_dir: Path) -> str:
    """``done``, ``test`` (fit finished, test missing), ``resume`` (stopped fit with last.ckpt) or ``fit``."""
    fit = read_summary(run_dir).get("fit", {})
    test = read_summary(run_dir / TEST_FOLDER).get("test", {})
    if fit.get("status") == "finished":
        if test.get("status") == "finished" and test.get("metrics"):
            return "done"
        return "test"
    if fit.get("status") in ("running", "interrupted") and (run_dir / "checkpoints" / "last.ckpt").is_file():
        return "resume"
    return "fit"


def fit_arguments(config_args: list[str], run_args: list[str], cell_args: list[str]) -> list[str]:
    """A cell's fit flags: its config files, the comparison's arguments, no progress bar (unless
    they set it), the cell's values."""
    quiet = [] if any("enable_progress_bar" in arg for arg in run_args) else QUIET
    return [*config_args, *run_args, *quiet, *cell_args]


#: The last line of a Python traceback: the exception and its message.
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b(:|$)")


def failure(stage: str, code: int, output: str) -> tuple[str, bool]:
    """Why a stage that ended with exit status ``code`` (negative: the signal that ended its
    process) failed, from its ``output``, and whether running it again can fix that (only when
    it was stopped or killed from outside)."""
    number = -code if code < 0 else code - 128 if code in [128 + s for s in STOPPING] else None
    if number is not None:
        name = signal.Signals(number).name
        if number in STOPPING:
            return f"{stage} stopped by {name}", True
        return f"{stage} crashed: {name}", False
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("error:")]
    if said:
        return f"{stage}: {said[-1].removeprefix('error:').strip()}"[:500], False
    if "Traceback (most recent call last):" in lines:
        after = lines[len(lines) - 1 - lines[::-1].index("Traceback (most recent call last):") :]
        raised = [line for line in after if EXCEPTION_LINE.match(line)]
        if raised:
            return f"{stage}: {raised[-1]}"[:500], raised[-1].startswith("KeyboardInterrupt")
    return f"{stage} exit status {code}: {lines[-1][-300:] if lines else 'no output'}", False


def explain_failures(outcome: list[RunResult], missing: list[str]) -> None:
    """The error lines of the runs that did not finish: each failed run's reason (from its log),
    and "run the same command again" only for those a rerun can fix (stopped or killed)."""
    failed = {r.key: r for r in outcome if not r.ok}
    fixed = [key for key in missing if key in failed and not failed[key].retry]
    lines = [f"error: {len(missing)} run(s) did not finish:"]
    for key in missing[:10]:
        result = failed.get(key)
        where = f" (log: {result.log})" if result and result.log else ""
        lines.append(f"  {key}: {result.error if result else 'not run'}{where}")
    if len(missing) > 10:
        lines.append(f"  ... and {len(missing) - 10} more")
    retried = len(missing) - len(fixed)
    if retried:
        lines.append(f"{retried} of them were stopped, killed or not run: run the same command again to resume them.")
    if fixed:
        lines.append(
            f"{len(fixed)} failed for a reason a rerun does not change: fix the config (or the code), then run "
            "the same command again."
        )
    print("\n".join(lines), file=sys.stderr, flush=True)


# -- one stage, in this process --------------------------------------------------------------


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[None]:
    """This process's stdout and stderr (file descriptors 1 and 2, and Python's streams) appended
    to ``path``: what the libraries, child processes and a crash print lands there too."""
    with open(path, "a", buffering=1) as log:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(Exception):
                stream.flush()
        saved = [os.dup(1), os.dup(2)]
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield
        finally:
            for stream in (sys.__stdout__, sys.__stderr__, log):
                with contextlib.suppress(Exception):
                    stream.flush()
            for fd, target in zip(saved, (1, 2)):
                os.dup2(fd, target)
                os.close(fd)


@contextlib.contextmanager
def isolated(plan: RunPlan, stage: str) -> Iterator[None]:
    """What one stage may change of this process, as a fresh process would have it, and put back:
    the environment (no inherited run folder; the W&B group of the comparison), the working
    folder, torch's threads and determinism flags, the warning filters; afterwards W&B is closed,
    the run folder's lock freed, and the peak-memory counters are reset for the next run."""
    import torch

    from ... import runs

    environ, cwd = dict(os.environ), os.getcwd()
    flags = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
    )
    os.environ.pop(RUN_DIR_ENV, None)
    if plan.group:
        os.environ["WANDB_RUN_GROUP"] = plan.group  # one W&B group per comparison
        os.environ["WANDB_JOB_TYPE"] = stage
    if plan.threads:
        torch.set_num_threads(plan.threads)
    _reset_peak_memory()
    os.chdir(plan.cwd)
    try:
        with warnings.catch_warnings():
            yield
    finally:
        _close_wandb()
        runs.release()
        runs.created.clear()
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        torch.use_deterministic_algorithms(flags[0])
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = flags[1:]
        if "torch._dynamo" in sys.modules:  # compiled graphs of this run's model
            torch._dynamo.reset()
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def _close_wandb() -> None:
    wandb = sys.modules.get("wandb")
    if wandb is not None and hasattr(wandb, "teardown"):
        with contextlib.suppress(Exception):
            if wandb.run is not None:
                wandb.finish()
            wandb.teardown()


def _reset_peak_memory() -> None:
    """Peak memory from now on: CUDA's counters, and on Linux the process's peak resident set
    (``ru_maxrss``, which ``echo 5 > /proc/self/clear_refs`` resets)."""
    import torch

    if torch.cuda.is_initialized():
        torch.cuda.reset_peak_memory_stats()
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def call(stage: str, args: list[str], plan: RunPlan) -> tuple[int, str]:
    """Run ``python -m framework <stage> <args>`` in this process; its exit status, and the
    pruner's message when an Optuna pruner stopped the fit."""
    from ..fit import FrameworkCLI, main

    cli = FrameworkCLI
    pruned: tuple[type[BaseException], ...] = ()
    if plan.pruning and stage == "fit":
        from .pruning import pruning_cli

        cli, pruned = pruning_cli(plan.pruning)
    try:
        main([stage, *args], cli=cli)
        return 0, ""
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            return code or 0, ""
        print(code, file=sys.stderr)
        return 1, ""
    except pruned as prune:
        print(f"pruned: {prune}", file=sys.stderr)
        return 1, str(prune) or "pruned"
    except KeyboardInterrupt:
        traceback.print_exc()
        return 128 + signal.SIGINT, ""
    except BaseException:  # the run's own failure: its traceback in its log, the worker goes on
        traceback.print_exc()
        return 1, ""


def run_stage(
    plan: RunPlan, stage: str, args: list[str], log: Path, on_stage: Callable[[str, str, int], None]
) -> tuple[Optional[tuple[str, bool]], str]:
    """One stage, its output appended to ``log``: None or why it failed and whether a rerun can
    fix it (see :func:`failure`); and the pruner's message when it was pruned. ``on_stage(stage,
    log, offset)`` is told first, where in the log the stage's output starts."""
    start = log.stat().st_size if log.exists() else 0
    on_stage(stage, str(log), start)
    with output_to(log), isolated(plan, stage):
        print(f"$ python -m framework {stage} {shlex.join(args)}", flush=True)
        code, pruned = call(stage, args, plan)
    if code == 0:
        return None, ""
    with open(log, errors="replace") as written:
        written.seek(start)
        return failure(stage, code, written.read()), pruned


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
    return [
        "--config",
        str(run_dir / "config.yaml"),
        *QUIET,
        *plan.test_args,
        "--ckpt_path",
        ckpt,
        f"--run_dir={run_dir / TEST_FOLDER}",
    ]


def execute(plan: RunPlan, on_stage: Callable[[str, str, int], None] = lambda *told: None) -> RunResult:
    """Do what the run still needs (see the module's docstring) in this process; never raises
    for a failed run. ``on_stage(stage, log, offset)`` is told when each stage starts."""
    start = time.perf_counter()
    run_dir = Path(plan.run_dir)
    todo = state(run_dir)
    if todo == "done":
        return RunResult(plan.key, True, "nothing")
    did: list[str] = []

    def failed(why: tuple[str, bool], log: str, pruned: str = "") -> RunResult:
        return RunResult(
            plan.key,
            False,
            "+".join(did),
            time.perf_counter() - start,
            f"pruned: {pruned}" if pruned else why[0],
            str(run_dir / log),
            retry=why[1] and not pruned,
            pruned=bool(pruned),
        )

    if todo == "fit" and run_dir.exists():  # a failed or empty attempt: start again
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if todo in ("fit", "resume"):
        did.append("resume" if todo == "resume" else "fit")
        why, pruned = run_stage(plan, "fit", fit_args(plan, todo == "resume"), run_dir / "fit.log", on_stage)
        if why is None and read_summary(run_dir).get("fit", {}).get("status") != "finished":
            why = ("fit ended without a finished summary.json", True)
        if why:
            return failed(why, "fit.log", pruned)
    shutil.rmtree(run_dir / TEST_FOLDER, ignore_errors=True)
    did.append("test")
    why, _ = run_stage(plan, "test", test_args(plan), run_dir / "test.log", on_stage)
    if why is None and not read_summary(run_dir / TEST_FOLDER).get("test", {}).get("metrics"):
        why = ("test ended without test metrics in summary.json", True)
    return failed(why, "test.log") if why else RunResult(plan.key, True, "+".join(did), time.perf_counter() - start)
