"""One folder per run: ``runs/<experiment>/<date>_<time>_<subcommand>``.

Checkpoints, the resolved config and every logger's files of a run go into its folder.
The folder is created when its name is chosen, so two runs never share one. A ``fit``
resumed from a checkpoint inside a run folder continues in that folder. Processes that
Lightning launches for DDP inherit the folder through ``FRAMEWORK_RUN_DIR``. Launchers that
start every rank themselves name the folder after their job, the same on every rank and
node: ``slurm-<job id>[-<array task>]_<subcommand>`` under SLURM, ``torchrun-<rdzv id>_<subcommand>``
under torchrun with ``--rdzv-id``; otherwise pass the same ``--run_dir`` to every rank.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

#: The folder of the presets (configs/<group>/x.yaml): a preset never names an experiment.
CONFIG_PRESETS = "configs"
RUN_DIR_ENV = "FRAMEWORK_RUN_DIR"
RUNS_ROOT_ENV = "FRAMEWORK_RUNS_DIR"
#: Run folders this process created (not inherited, resumed or named by --run_dir).
created: list[Path] = []


def new_run_dir(experiment: str, subcommand: str, root: Optional[Path] = None) -> Path:
    """Create and return a fresh run folder under ``root`` (default ``$FRAMEWORK_RUNS_DIR`` or ``runs``)."""
    root = Path(root or os.environ.get(RUNS_ROOT_ENV, "runs"))
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    base = root / experiment / f"{stamp}_{subcommand}"
    candidate, n = base, 1
    while True:
        try:
            candidate.mkdir(parents=True)
            created.append(candidate)
            return candidate
        except FileExistsError:
            candidate, n = base.with_name(f"{base.name}-{n}"), n + 1


def discard_unused() -> None:
    """Remove the run folders this process created that hold no checkpoint and no metrics: a run
    that failed before training (a config error) leaves no empty folder behind."""
    while created:
        folder = created.pop()
        if folder.is_dir() and not any(folder.rglob("*.ckpt")) and not any(folder.rglob("metrics.csv")):
            shutil.rmtree(folder, ignore_errors=True)
            if folder.parent.is_dir() and not any(folder.parent.iterdir()):
                folder.parent.rmdir()


def run_dir_of_checkpoint(ckpt_path: Optional[str]) -> Optional[Path]:
    """The run folder a checkpoint was written into (``<run>/checkpoints/x.ckpt``), if any."""
    if not ckpt_path:
        return None
    path = Path(ckpt_path)
    if path.parent.name == "checkpoints" and path.is_file():
        return path.parent.parent
    return None


def launcher_job() -> Optional[str]:
    """The job of a launcher that started every rank itself, the same on all of them: SLURM's job
    (and array task), or torchrun's rendezvous id; None for one process or Lightning's own launch."""
    if int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1"))) < 2:
        return None
    if job := os.environ.get("SLURM_JOB_ID"):
        task = os.environ.get("SLURM_ARRAY_TASK_ID")
        return f"slurm-{job}" + (f"-{task}" if task else "")
    rendezvous = os.environ.get("TORCHELASTIC_RUN_ID")
    return f"torchrun-{rendezvous}" if rendezvous and rendezvous != "none" else None


def resolve_run_dir(subcommand: str, experiment: str, run_dir: Optional[str], ckpt_path: Optional[str]) -> Path:
    """Pick this process's run folder and publish it to child processes.

    Order: a DDP child's inherited folder; ``--run_dir``; the folder of the checkpoint a
    ``fit`` resumes from; the launcher's job folder (:func:`launcher_job`); a new folder, beside
    the run of the checkpoint that a ``validate``, ``test`` or ``predict`` reads, else under
    ``runs/<experiment>``.
    """
    inherited = os.environ.get(RUN_DIR_ENV)
    if inherited and os.environ.get("LOCAL_RANK", "0") != "0":
        path = Path(inherited)
    elif run_dir:
        path = Path(run_dir)
    elif subcommand == "fit" and (resumed := run_dir_of_checkpoint(ckpt_path)) is not None:
        path = resumed
    elif (job := launcher_job()) is not None:
        path = Path(os.environ.get(RUNS_ROOT_ENV, "runs")) / experiment / f"{job}_{subcommand}"
    elif (source := run_dir_of_checkpoint(ckpt_path)) is not None:
        path = new_run_dir(source.parent.name, subcommand, root=source.parent.parent)
    else:
        path = new_run_dir(experiment, subcommand)
    path.mkdir(parents=True, exist_ok=True)
    os.environ[RUN_DIR_ENV] = str(path)
    return path


def _experiment_name(config_paths: Optional[list]) -> str:
    """The first config file that is not a preset (configs/<group>/x.yaml) names the experiment."""
    for path in config_paths or []:
        path = Path(str(path))
        if path.parent.parent.name != CONFIG_PRESETS:
            return path.stem
    return "run"


def _fill_logger_save_dir(logger_config: Any, run_dir: Path) -> None:
    """Point every configured logger whose ``save_dir`` is unset at the run folder."""
    specs = logger_config if isinstance(logger_config, list) else [logger_config]
    for spec in specs:
        init_args = getattr(spec, "init_args", None)
        if init_args is not None and "save_dir" in init_args and init_args.save_dir is None:
            init_args.save_dir = str(run_dir)


def place_run(config: Any, stage: str) -> None:
    """Give a run its folder (``runs/<experiment>/<time>_<stage>`` unless ``run_dir`` is set, the
    experiment named after the first config file): the trainer's root, the checkpoints' folder and
    every logger's ``save_dir`` that the config leaves unset."""
    experiment = config.experiment = config.experiment or _experiment_name(config.get("config"))
    run_dir = resolve_run_dir(stage, experiment, config.run_dir, config.get("ckpt_path"))
    config.run_dir = str(run_dir)
    config.trainer.default_root_dir = str(run_dir)
    if config.checkpoint.dirpath is None:
        config.checkpoint.dirpath = str(run_dir / "checkpoints")
    _fill_logger_save_dir(config.trainer.logger, run_dir)
