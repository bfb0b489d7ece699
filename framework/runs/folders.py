"""One folder per run: ``runs/<experiment>/<date>_<time>_<subcommand>``, the experiment being
``<domain>/<config>`` for a config under ``domains/`` (``runs/vision/ccnet/...``).

Checkpoints, the resolved config and every logger's files of a run go into its folder, and the
folder belongs to that run: it is created when its name is chosen, so two runs never share
one; a folder that already holds a run (``--run_dir``) is refused unless a ``fit`` resumes
it from one of its checkpoints; and while a process writes there it holds a lock on the
folder, so a second process started on it stops at once, saying so. Experiment names from the
command line stay inside the runs folder. A ``fit``
resumed from a checkpoint inside a run folder continues in that folder. Processes that
Lightning launches for DDP inherit the folder through ``FRAMEWORK_RUN_DIR``. Launchers that
start every rank themselves name the folder after their job, the same on every rank and
node: ``slurm-<job id>[-<array task>]_<subcommand>`` under SLURM, ``torchrun-<rdzv id>_<subcommand>``
under torchrun with ``--rdzv-id``; otherwise pass the same ``--run_dir`` to every rank. A SLURM
batch job is named so with one task too: requeued (preempted, out of time), it starts again in
its folder, and its ``fit`` resumes from the newest of ``last.ckpt`` and Lightning's ``hpc_ckpt``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from ..errors import ConfigError
from .files import PARTIAL_SUFFIX, read_summary

#: The folder of the presets (configs/<group>/x.yaml): a preset never names an experiment.
CONFIG_PRESETS = "configs"
RUN_DIR_ENV = "FRAMEWORK_RUN_DIR"
RUNS_ROOT_ENV = "FRAMEWORK_RUNS_DIR"
#: Run folders this process created (not inherited, resumed or named by --run_dir).
created: list[Path] = []
#: What a run writes into its folder: a folder holding one of these holds a run.
RUN_FILES = ("config.yaml", "summary.json", "checkpoints", "metrics.csv", "wandb")
#: Run folders this process holds a lock on: folder -> the open descriptor that holds it.
_locks: dict[Path, int] = {}


def holds_a_run(folder: Path) -> bool:
    return any((folder / name).exists() for name in RUN_FILES)


def lock(folder: Path) -> None:
    """Take the lock on a run folder for this process (released by :func:`release`, or when the
    process ends, however it ends); one line when another process holds it or the folder cannot
    be written. The owner then removes the partial checkpoint files a killed writer left."""
    folder = folder.resolve()
    if folder in _locks:
        return
    if not os.access(folder, os.W_OK):
        raise ConfigError(
            f"the run folder {folder} cannot be written (permissions or a read-only file system): "
            "make it writable, or choose another with --run_dir"
        )
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise ConfigError(
            f"the run folder {folder} is in use by another process: wait for it to end, or choose "
            "another folder with --run_dir"
        ) from None
    _locks[folder] = descriptor
    for partial in (folder / "checkpoints").glob(f".*{PARTIAL_SUFFIX}"):  # what a writer killed mid-write left
        partial.unlink(missing_ok=True)


def release() -> None:
    """Give up the locks this process holds (a command's run has ended)."""
    while _locks:
        _, descriptor = _locks.popitem()
        os.close(descriptor)


def new_run_dir(experiment: str, subcommand: str, root: Optional[Path] = None) -> Path:
    """Create and return a fresh run folder under ``root`` (default ``$FRAMEWORK_RUNS_DIR`` or ``runs``)."""
    root = Path(root or runs_root())
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
    """Remove the run folders this process created that hold no checkpoint: a run that failed
    before its first checkpoint (a config error, a damaged data file found mid-epoch) leaves no
    folder behind, only its message."""
    while created:
        folder = created.pop()
        if folder.is_dir() and not any(folder.rglob("*.ckpt")):
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
    (and array task), or torchrun's rendezvous id; None for one process or Lightning's own launch.
    A SLURM batch job with one task counts too (what Lightning's ``SLURMEnvironment.detect`` takes
    for one, which turns on its auto-requeue): requeued, it finds its folder under the same id."""
    several = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1"))) >= 2
    batch = "SLURM_NTASKS" in os.environ and os.environ.get("SLURM_JOB_NAME") not in ("bash", "interactive")
    if (job := os.environ.get("SLURM_JOB_ID")) and (several or batch):
        task = os.environ.get("SLURM_ARRAY_TASK_ID")
        return f"slurm-{job}" + (f"-{task}" if task else "")
    if not several:
        return None
    rendezvous = os.environ.get("TORCHELASTIC_RUN_ID")
    return f"torchrun-{rendezvous}" if rendezvous and rendezvous != "none" else None


def requeued_checkpoint(run_dir: Path) -> Optional[str]:
    """What a requeued job's fit resumes from in its job folder: ``last.ckpt`` when it is newer
    than Lightning's ``hpc_ckpt_N.ckpt`` (written on SLURM's requeue signal, in the middle of a
    step; ``last.ckpt`` follows at the step's end when the job is then stopped), else None, and
    Lightning resumes from its hpc checkpoint itself, if any."""
    last = run_dir / "checkpoints" / "last.ckpt"
    if not last.is_file():
        return None
    hpc = [path.stat().st_mtime for path in run_dir.glob("hpc_ckpt_*.ckpt")]
    return str(last) if not hpc or last.stat().st_mtime >= max(hpc) else None


def resolve_run_dir(subcommand: str, experiment: str, run_dir: Optional[str], ckpt_path: Optional[str]) -> Path:
    """Pick this process's run folder and publish it to child processes.

    Order: a DDP child's inherited folder; ``--run_dir``; the folder of the checkpoint a
    ``fit`` resumes from; the launcher's job folder (:func:`launcher_job`); a new folder, beside
    the run of the checkpoint that a ``validate``, ``test`` or ``predict`` reads, else under
    ``runs/<experiment>``.
    """
    inherited = os.environ.get(RUN_DIR_ENV)
    resumed = run_dir_of_checkpoint(ckpt_path) if subcommand == "fit" else None
    job = launcher_job()
    if inherited and os.environ.get("LOCAL_RANK", "0") != "0":  # a DDP child: its parent owns the folder
        return Path(inherited)
    if run_dir:
        path = Path(run_dir)
        if path.exists() and not path.is_dir():
            raise ConfigError(f"--run_dir {path} is a file, not a folder: name a new folder")
        if path.is_dir():
            lock(path)  # first: a folder another process writes in is said to be in use
        if holds_a_run(path) and (resumed is None or resumed.resolve() != path.resolve()):
            raise ConfigError(
                f"--run_dir {path} already holds a run: name a new folder, or resume that run with "
                f"`fit --ckpt_path {path / 'checkpoints' / 'last.ckpt'}`"
            )
    elif resumed is not None:
        path = resumed
    elif job is not None:  # every rank and a requeued job name the same folder
        path = runs_root() / experiment / f"{job}_{subcommand}"
    elif (source := run_dir_of_checkpoint(ckpt_path)) is not None:
        path = new_run_dir(source.parent.name, subcommand, root=source.parent.parent)
    else:
        path = new_run_dir(experiment, subcommand)
    path.mkdir(parents=True, exist_ok=True)
    if job is None or int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0"))) == 0:
        lock(path)
    os.environ[RUN_DIR_ENV] = str(path)
    return path


def runs_root() -> Path:
    """``$FRAMEWORK_RUNS_DIR``, or ``runs``."""
    return Path(os.environ.get(RUNS_ROOT_ENV, "runs"))


def check_experiment(name: str) -> str:
    """An experiment name from the command line: a relative path that stays inside the runs folder."""
    parts = Path(name).parts
    if not name.strip() or Path(name).is_absolute() or ".." in parts or any(part.startswith("~") for part in parts):
        raise ConfigError(
            f"--experiment must name a folder inside the runs folder ({runs_root()}), such as "
            f"'ablations' or 'vision/heads', got {name!r}"
        )
    return name


#: Room a run folder's path leaves for the longest path a run writes inside it (W&B's media files,
#: ``wandb/offline-run-<time>-<id>/files/media/images/<block>_<step>_<hash>.png``), in bytes.
ROOM_INSIDE = 256
#: The name of a run folder that :func:`new_run_dir` makes: ``<date>_<time>_<subcommand>[-<n>]``.
STAMPED = len("2000-01-01_00-00-00_validate-99")


def check_length(path: Path, source: str, inside: int = ROOM_INSIDE) -> None:
    """A run folder's ``path`` within the file system's limits: each name at most ``NAME_MAX``
    bytes, the whole absolute path at most ``PATH_MAX`` with ``inside`` bytes left for what is
    written in it; one line naming ``source`` (the option that chose the name) and the limit
    otherwise, before any folder is made (the system would say "File name too long" later, at
    some file)."""
    full = Path(os.path.abspath(path))
    existing = next(folder for folder in (full, *full.parents) if os.path.exists(folder))  # never raises
    name_max, path_max = (
        _limit(existing, name, default) for name, default in (("PC_NAME_MAX", 255), ("PC_PATH_MAX", 4096))
    )
    for part in full.parts:
        if len(os.fsencode(part)) > name_max:
            raise ConfigError(
                f"{source}: the folder name {part[:40]!r}... is {len(os.fsencode(part))} bytes long, over the "
                f"file system's limit of {name_max} bytes a name (NAME_MAX): choose a shorter one"
            )
    if (length := len(os.fsencode(str(full)))) + inside > path_max:
        raise ConfigError(
            f"{source}: the run folder {str(full)[:60]}... is a path of {length} bytes, over the file system's "
            f"limit of {path_max} bytes (PATH_MAX) less {inside} for the files a run writes in it: choose a "
            "shorter one"
        )


def _limit(folder: Path, name: str, default: int) -> int:
    """The file system's ``pathconf`` limit ``name`` at ``folder``, or ``default`` where it states none."""
    try:
        limit = os.pathconf(folder, name)
    except (OSError, ValueError):
        return default
    return limit if limit > 0 else default


def _experiment_name(config_paths: Optional[list]) -> str:
    """The first config file that is not a preset (configs/<group>/x.yaml) names the experiment:
    ``<domain>/<config>`` for a domain's config (``domains/vision/ccnet.yaml``: ``vision/ccnet``),
    else the file's name."""
    for path in config_paths or []:
        path = Path(str(path))
        if path.parent.parent.name == CONFIG_PRESETS:
            continue
        parts = path.resolve().parts
        if len(parts) >= 3 and parts[-3] == "domains":
            return f"{parts[-2]}/{path.stem}"
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
    every logger's ``save_dir`` that the config leaves unset; a validate, test, predict or evaluate
    of a fit's checkpoint is a W&B run in the fit's group, at its last step, under keys of its own
    (:func:`framework.loggers.join_fit_run`). First, before any folder is made, what would
    fail later: a W&B logger's ``WANDB_MODE``, a folder name too long for the file system."""
    from ..loggers import check_wandb_mode, join_fit_run, key_prefix

    check_wandb_mode(config.trainer.logger)
    given = config.experiment
    experiment = config.experiment = check_experiment(given) if given else _experiment_name(config.get("config"))
    named = config.run_dir
    if named:
        check_length(Path(named), "--run_dir")
    else:
        source = "--experiment" if given else f"the experiment {experiment!r} (named after the config; --experiment)"
        check_length(runs_root() / experiment, source, STAMPED + 1 + ROOM_INSIDE)
    run_dir = resolve_run_dir(stage, experiment, named, config.get("ckpt_path"))
    if stage == "fit" and not named and not config.get("ckpt_path") and launcher_job():
        config.ckpt_path = requeued_checkpoint(run_dir)
    config.run_dir = str(run_dir)
    config.trainer.default_root_dir = str(run_dir)
    if config.checkpoint.dirpath is None:
        config.checkpoint.dirpath = str(run_dir / "checkpoints")
    _fill_logger_save_dir(config.trainer.logger, run_dir)
    # a fit heads its W&B group; a test of its checkpoint joins it, at the fit's last step
    fit_run = run_dir_of_checkpoint(config.get("ckpt_path")) if stage != "fit" else None
    fit_step = read_summary(fit_run).get("fit", {}).get("global_step") if fit_run else None
    prefix = key_prefix(stage, config.get("ablation"), config.get("ablation_blocks") or ())
    join_fit_run(config.trainer.logger, stage, fit_run, fit_step, prefix)
