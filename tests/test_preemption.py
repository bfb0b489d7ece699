"""Preemption: a SLURM job told by SLURM that its time is up (``--signal=SIGUSR1@90``) saves,
requeues itself through Lightning's auto-requeue and resumes in its own folder when it starts
again; one whose requeue fails trains on, in the same W&B run; a submitit job of ``compare`` that
is preempted stops its run, checkpoints and is requeued, and the requeued job resumes the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest
import submitit
from lightning.pytorch.callbacks import Callback

from framework.commands.compare.executors import Job
from framework.commands.compare.runner import RunPlan, fit_arguments
from framework.runs import read_summary
from tests.comparisons import DEMO
from tests.wandb_records import history

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end


class WaitForStop(Callback):
    """After training step ``step``, once: writes its process id to ``marker`` and waits (a
    minute at most) until the run is told to stop (SIGTERM), so that a signal sent then finds
    the run in the middle of training."""

    def __init__(self, marker: str, step: int = 2) -> None:
        self.marker, self.step = Path(marker), step

    def told(self, trainer) -> bool:
        return trainer.received_sigterm

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step != self.step or self.marker.exists():
            return
        self.marker.write_text(str(os.getpid()))
        deadline = time.monotonic() + 60
        while not self.told(trainer) and time.monotonic() < deadline:
            time.sleep(0.05)


class WaitForRequeue(WaitForStop):
    """As :class:`WaitForStop`, until SLURM's requeue signal was handled (its checkpoint saved)."""

    def told(self, trainer) -> bool:
        return any(Path(trainer.default_root_dir).glob("hpc_ckpt_*.ckpt"))


def waiting(marker: Path, callback: str = "WaitForStop") -> str:
    return (
        f'--trainer.callbacks+={{"class_path": "tests.test_preemption.{callback}", '
        f'"init_args": {{"marker": "{marker}"}}}}'
    )


def waited(marker: Path, still: Callable[[], bool]) -> int:
    """The process id the callback wrote, once it waits; fails when ``still()`` turns false first."""
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert still() and time.monotonic() < deadline, "the run ended or hung before its training step"
        time.sleep(0.05)
    time.sleep(0.1)  # the pid's bytes
    return int(marker.read_text())


def fits(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("$ python -m framework fit")]


def slurm_job(tmp_path: Path, job: str, scontrol: str) -> dict[str, str]:
    """The environment of a SLURM batch job of one task, ``job``, whose ``scontrol`` is a stand-in that
    logs its arguments to ``tmp_path/scontrol.log`` and then runs the shell line ``scontrol``."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "scontrol").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "scontrol.log"}\n{scontrol}\n')
    (fake / "scontrol").chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "SLURM_JOB_ID": job,
        "SLURM_NTASKS": "1",
        "SLURM_JOB_NAME": "train",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "0",
        "SLURM_NODELIST": "node1",
    }


def test_a_slurm_job_told_its_time_is_up_saves_requeues_itself_and_resumes_in_its_folder(tmp_path):
    env = slurm_job(tmp_path, "4242", "kill -TERM $PPID")  # SLURM stops a requeued job with SIGTERM: so does the fake
    marker = tmp_path / "waiting"
    command = [sys.executable, "-m", "framework", "fit", *DEMO, waiting(marker)]  # as an sbatch script's line
    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.kill(waited(marker, lambda: job.poll() is None), signal.SIGUSR1)
    out, _ = job.communicate(timeout=120)
    assert job.returncode == 128 + signal.SIGTERM, out[-3000:]
    assert (tmp_path / "scontrol.log").read_text() == "requeue 4242\n"
    run = Path(os.environ["FRAMEWORK_RUNS_DIR"]) / "demo" / "demo" / "slurm-4242_fit"
    assert (run / "hpc_ckpt_1.ckpt").is_file() and (run / "checkpoints" / "last.ckpt").is_file()
    assert read_summary(run)["fit"]["status"] == "interrupted"

    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)  # the requeued job
    assert again.returncode == 0, again.stderr[-3000:]
    fit = read_summary(run)["fit"]
    assert fit["status"] == "finished" and len(fit["history"]) == 2
    assert not list(run.parent.glob("*_fit"))[1:]  # one folder: the job's


def test_a_slurm_job_whose_requeue_fails_trains_on_in_the_same_wandb_run(tmp_path):
    env = slurm_job(tmp_path, "4343", "exit 1")  # scontrol refuses (the job is not requeueable, say)
    marker = tmp_path / "waiting"
    csv = DEMO.index("configs/logger/csv.yaml")
    logged_to_wandb = DEMO[: csv - 1] + DEMO[csv + 1 :]  # the default logger: W&B (offline: no key)
    command = [sys.executable, "-m", "framework", "fit", *logged_to_wandb, waiting(marker, "WaitForRequeue")]
    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.kill(waited(marker, lambda: job.poll() is None), signal.SIGUSR1)
    out, _ = job.communicate(timeout=120)
    assert job.returncode == 0, out[-3000:]
    assert (tmp_path / "scontrol.log").read_text() == "requeue 4343\n" and "Requeuing SLURM job 4343 failed" in out
    run = Path(os.environ["FRAMEWORK_RUNS_DIR"]) / "demo" / "demo" / "slurm-4343_fit"
    fit = read_summary(run)["fit"]
    assert fit["status"] == "finished" and fit["epochs"] == 2 and (run / "hpc_ckpt_1.ckpt").is_file()
    (record,) = (run / "wandb").glob("offline-run-*/run-*.wandb")  # one W&B run: never finished and started again
    validations = [row for row in history(record) if "val/acc" in row]
    assert len(validations) == 2, out[-3000:]


def test_a_preempted_submitit_job_of_compare_checkpoints_is_requeued_and_resumes_its_run(tmp_path):
    marker = tmp_path / "waiting"
    plan = RunPlan(
        cell="mhsa",
        label="mhsa",
        seed=0,
        run_dir=str(tmp_path / "run"),
        test_args=[],
        group="preempted",
        fit_args=fit_arguments([], [*DEMO, waiting(marker)], []),
        threads=1,
    )
    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="local")
    executor.update_parameters(timeout_min=60)  # a signal long before the time is up: preempted, not timed out
    job = executor.submit(Job(), asdict(plan))
    preemption = submitit.JobEnvironment._usr_sig()  # what SLURM sends (USR2 unless SUBMITIT_PREEMPT_SIGNAL says)
    os.kill(waited(marker, lambda: not job.done()), preemption)
    result = job.result()
    assert result["ok"] and result["did"] == "resume+test", result
    assert f"Caught signal {preemption.name}" in job.stderr() and "this job is preempted" in job.stderr()
    commands = fits(tmp_path / "run" / "fit.log")
    assert len(commands) == 2 and "--ckpt_path" not in commands[0] and "last.ckpt" in commands[1]
    assert read_summary(tmp_path / "run")["fit"]["status"] == "finished"
