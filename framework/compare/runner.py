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
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

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


def _run_stage(plan: RunPlan, stage: str, args: list[str], log: Path) -> Optional[str]:
    """Run one stage as a process, its output appended to ``log``; None, or why it failed."""
    command = _command(plan, stage, args)
    with open(log, "a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        code = subprocess.run(command, cwd=plan.cwd, env=environment(plan, stage), stdout=out,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    if code == 0:
        return None
    tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-3:]
    return f"{stage} exit status {code}: " + " | ".join(line.strip() for line in tail)[-400:]


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


def execute(plan: RunPlan) -> RunResult:
    """Do what the run still needs (see the module's docstring); never raises for a failed run."""
    start = time.perf_counter()
    run_dir = Path(plan.run_dir)
    todo = state(run_dir)
    if todo == "done":
        return RunResult(plan.key, True, "nothing")
    did = []
    if todo == "fit" and run_dir.exists():  # a failed or empty attempt: start again
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if todo in ("fit", "resume"):
        did.append("resume" if todo == "resume" else "fit")
        error = _run_stage(plan, "fit", fit_args(plan, todo == "resume"), run_dir / "fit.log")
        if error is None and read_summary(run_dir).get("fit", {}).get("status") != "finished":
            error = "fit ended without a finished summary.json"
        if error:
            return RunResult(plan.key, False, "+".join(did), time.perf_counter() - start, error, str(run_dir / "fit.log"))
    shutil.rmtree(run_dir / TEST_FOLDER, ignore_errors=True)
    did.append("test")
    error = _run_stage(plan, "test", test_args(plan), run_dir / "test.log")
    if error is None and not read_summary(run_dir / TEST_FOLDER).get("test", {}).get("metrics"):
        error = "test ended without test metrics in summary.json"
    return RunResult(plan.key, error is None, "+".join(did), time.perf_counter() - start, error or "",
                     str(run_dir / "test.log") if error else "")


def execute_dict(plan: dict) -> dict:
    """:func:`execute` on plain data (what a submitit job pickles)."""
    return asdict(execute(RunPlan(**plan)))
