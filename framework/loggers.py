"""Loggers whose files land in the run folder, and a W&B logger that never needs a network."""

from __future__ import annotations

import csv
import hashlib
import netrc
import os
import socket
import threading
from pathlib import Path
from typing import Any, Optional, get_args
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from lightning.pytorch.loggers import CSVLogger as _CSVLogger
from lightning.pytorch.loggers import TensorBoardLogger as _TensorBoardLogger
from lightning.pytorch.loggers import WandbLogger as _WandbLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loggers.logger import rank_zero_experiment
from lightning.pytorch.utilities import rank_zero_info, rank_zero_only

from .errors import ConfigError
from .values import PositiveInt

REACH_TIMEOUT = 3.0  # seconds the W&B server gets to accept a connection before a run goes offline
INIT_TIMEOUT = 15.0  # seconds wandb.init may take online (wandb's default is 90); WANDB_INIT_TIMEOUT overrides
#: The status Lightning's SLURM auto-requeue (SIGUSR1) finalizes the loggers with while the run goes on: the job
#: requeued, SLURM stops it next (SIGTERM, which ends the W&B run); the requeue failed, it trains on, in the same run.
REQUEUE_STATUS = "finished"


def wandb_credentials_available() -> bool:
    """An API key in the environment or in ~/.netrc (what ``wandb login`` writes)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (FileNotFoundError, netrc.NetrcParseError):
        return False


def wandb_base_url() -> str:
    """The W&B server that ``wandb.init`` would contact: ``WANDB_BASE_URL``, ``wandb login --host``
    or wandb's default, as wandb's own settings resolve them."""
    from wandb.sdk import wandb_setup

    return wandb_setup.singleton().settings.base_url


def unreachable(url: str, timeout: float = REACH_TIMEOUT) -> Optional[str]:
    """Why no connection to the server at ``url`` (or to the proxy in front of it) opens within
    ``timeout`` seconds, or None when one does. The name lookup, which a socket timeout does not
    bound, runs in a thread that is given up on after ``timeout``."""
    parts = urlsplit(url)
    proxy = None if proxy_bypass(parts.hostname or "") else getproxies().get(parts.scheme)
    target = urlsplit(proxy) if proxy else parts
    host, port = target.hostname, target.port or (443 if target.scheme == "https" else 80)
    failures: list[str] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as error:
            failures.append(error.strerror or str(error))

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return f"{host}:{port} did not answer within {timeout:g} s"
    return f"cannot connect to {host}:{port}: {failures[0]}" if failures else None


def _offline_reason() -> Optional[str]:
    """Why a run cannot go online (no API key, the server out of reach), or None."""
    if not wandb_credentials_available():
        return "no API key (WANDB_API_KEY or `wandb login`)"
    url = wandb_base_url()
    reason = unreachable(url)
    return f"W&B server {url} unreachable ({reason})" if reason else None


def wandb_modes() -> tuple[str, ...]:
    """The values W&B takes for ``WANDB_MODE``, as the installed wandb declares them."""
    from wandb.sdk.wandb_settings import Settings

    return get_args(Settings.model_fields["mode"].annotation)


def wandb_mode() -> Optional[str]:
    """``WANDB_MODE`` as the user set it (None when unset): an empty or unknown value is one line
    naming the variable and W&B's modes (:func:`wandb_modes`), instead of wandb's validation error
    once the run is built."""
    mode = os.environ.get("WANDB_MODE")
    if mode is not None and mode not in (modes := wandb_modes()):
        raise ConfigError(
            f"WANDB_MODE={mode!r} is not a W&B mode: set it to one of {', '.join(modes)}, or unset it "
            "(runs are then logged online when they can be, else offline)"
        )
    return mode


def check_wandb_mode(logger_config: Any) -> None:
    """:func:`wandb_mode`'s check, before anything is built, when the configured loggers include W&B's."""
    specs = logger_config if isinstance(logger_config, list) else [logger_config]
    if any(str(getattr(spec, "class_path", "")).endswith(".WandbLogger") for spec in specs):
        wandb_mode()


def _say_offline(reason: str, save_dir: Optional[str]) -> None:
    folder = f"{save_dir or '.'}/wandb"
    rank_zero_info(
        f"W&B: {reason}, so the run is logged offline into {folder}; "
        f"upload it later with `wandb sync {folder}/offline-run-*`."
    )


class WandbLogger(_WandbLogger):
    """Lightning's W&B logger, with defaults for this framework.

    * ``save_dir`` (left unset) is the run folder; ``name`` defaults to
      ``<experiment>/<run folder>`` and ``id`` to a name derived from the folder's path, so a
      resumed ``fit`` continues the same W&B run and two folders never share one.
    * ``offline`` (left unset) is decided here: without an API key (``WANDB_API_KEY`` or
      ``wandb login``), when the W&B server (``WANDB_BASE_URL`` ...) accepts no connection within
      ``REACH_TIMEOUT`` seconds, or when ``wandb.init`` fails online, the run is written offline
      into ``<run>/wandb`` and this is said once, with the reason;
      ``wandb sync <run>/wandb/offline-run-*`` uploads it later. A ``WANDB_MODE`` set by the
      user (``offline``, ``disabled``, ``online`` ...) is honoured as it is; an empty or unknown
      one is refused in one line (:func:`wandb_mode`).
    * ``wandb.init`` gives up online after ``INIT_TIMEOUT`` seconds, not wandb's 90, unless
      ``WANDB_INIT_TIMEOUT`` or ``settings`` says otherwise.
    * Under DDP only rank 0 creates a run (Lightning's rank-zero experiment).
    * The run is closed at the end of each trainer stage, so its files are complete; not on SLURM's
      requeue signal, which a training that goes on follows (a requeue that failed).
    * ``run_of``: a ``validate``, ``test``, ``predict`` or ``evaluate`` of a fit's checkpoint
      continues the fit's run (its id and name, resumed; ``job_type`` says which it was), so that
      the test metrics and the evaluation table land beside the training curves (the CLI sets it;
      offline, the continuation is its own record under this run's folder, merged by ``wandb sync``).
    """

    def __init__(
        self,
        name: Optional[str] = None,
        save_dir: Optional[str] = None,
        project: str = "attention-framework",
        offline: Optional[bool] = None,
        id: Optional[str] = None,
        log_model: bool = False,
        run_of: Optional[str] = None,
        job_type: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        # A config spells out every wandb.init argument, unset ones as None, which would override
        # Lightning's own choices (resume="allow") and ours (settings): only the ones given count.
        kwargs = {key: value for key, value in kwargs.items() if value is not None}
        mode = wandb_mode()  # the user's explicit choice wins
        if mode == "online" and offline is None and (reason := _offline_reason()):  # asked for, and impossible
            raise ConfigError(
                f"WANDB_MODE=online, but {reason}: unset WANDB_MODE to log offline (the run is kept "
                "and can be uploaded later), or fix the key or the network"
            )
        chosen_here = offline is None and mode is None
        if chosen_here:
            reason = _offline_reason()
            offline = reason is not None
            if offline:
                _say_offline(reason, save_dir)
        self._fall_back = chosen_here and not offline  # online by this choice: a failing wandb.init goes offline
        #: ``[step, {metric: value}]`` of every ``log_metrics`` call of this run (resumed ones included),
        #: kept in every checkpoint (:class:`~framework.callbacks.ResumePoints`).
        self.logged: list = []
        if "settings" not in kwargs:  # offline, the line above says it all; online, wandb's essentials only
            kwargs["settings"] = {"silent": True} if offline else {"quiet": True}
            if not offline and "WANDB_INIT_TIMEOUT" not in os.environ:
                kwargs["settings"]["init_timeout"] = INIT_TIMEOUT
        # the run this one belongs to: its own folder's, or the fit's whose checkpoint it tests
        folder = Path(run_of or save_dir).resolve() if run_of or save_dir else None
        if job_type:
            kwargs["job_type"] = job_type
        #: finish the W&B run when a trainer stage ends (False: the caller finalizes it)
        self.finish_with_stage = True
        #: this run continues a fit's (``run_of``): its config stays the fit's
        self.continues_fit = run_of is not None
        super().__init__(
            name=name or (f"{folder.parent.name}/{folder.name}" if folder else None),
            save_dir=save_dir or ".",
            project=project,
            id=id or (_run_id(folder) if folder else None),
            log_model=log_model,
            # Passed to wandb.init directly: Lightning's own `offline` rewrites WANDB_MODE process-wide.
            mode="offline" if offline else mode,
            **kwargs,
        )
        self._wandb_init.pop("anonymous", None)  # Lightning passes it, and wandb warns that it has no effect

    @property
    @rank_zero_experiment
    def experiment(self) -> Any:
        """The W&B run; when ``wandb.init`` fails online in a mode chosen here, an offline one, said once;
        when it fails online as the user asked (``WANDB_MODE=online``), one line saying why."""
        import wandb

        if self._experiment is None and self._fall_back:
            try:
                return super().experiment
            except wandb.Error as error:
                _say_offline(f"wandb.init failed online ({str(error).splitlines()[0]})", self.save_dir)
                wandb.teardown()  # the service still holds the failed run's id, which the offline run reuses
                self._wandb_init["mode"], self._fall_back = "offline", False
        if self._experiment is None and self._wandb_init.get("mode") == "online":
            try:
                return super().experiment
            except wandb.Error as error:
                raise ConfigError(
                    f"WANDB_MODE=online, but wandb.init failed ({str(error).splitlines()[0]}): unset "
                    "WANDB_MODE to log offline, or fix the key or the network"
                ) from None
        return super().experiment

    def finalize(self, status: str) -> None:
        super().finalize(status)
        if self._experiment is not None and self.finish_with_stage and status != REQUEUE_STATUS:
            self._experiment.finish()
            self._experiment = None

    @rank_zero_only
    def log_metrics(self, metrics: dict[str, Any], step: Optional[int] = None) -> None:
        """Lightning's, remembering the numbers logged (:attr:`logged`, kept in every checkpoint;
        pictures, which ``log_image`` passes through here, are not)."""
        record(self.logged, metrics, step)
        super().log_metrics(metrics, step)

    @rank_zero_only
    def resume_at(self, step: int, logged: Optional[list]) -> None:
        """A resumed fit continues at ``step``. An offline run is written into a new record, and the
        record of a process that was killed may hold nothing (W&B writes it out in blocks): the
        metrics logged before the checkpoint are logged again, so that the new record holds the
        whole run. An online run's server already has them."""
        self.logged, logged = [], logged or []
        offline = self._wandb_init.get("mode") == "offline" or os.environ.get("WANDB_MODE") == "offline"
        for row_step, metrics in logged:
            if offline:
                self.log_metrics(metrics, row_step)
            else:
                self.logged.append([row_step, metrics])


def record(logged: list, metrics: dict[str, Any], step: Optional[int]) -> None:
    """Append ``[step, {name: number}]`` of the numbers among ``metrics`` (ints stay ints) to ``logged``."""
    numbers = {}
    for name, value in metrics.items():
        value = value.item() if hasattr(value, "numel") and value.numel() == 1 else value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            numbers[name] = value
    if numbers:
        logged.append([step, numbers])


def _run_id(folder: Path) -> str:
    """A W&B run id that is stable for a run folder and distinct between folders."""
    digest = hashlib.sha1(str(folder).encode()).hexdigest()[:8]
    return f"{folder.parent.name}-{folder.name}-{digest}"[-64:]


class _AppendingWriter(ExperimentWriter):
    """Lightning's CSV writer, except that an existing ``metrics.csv`` is continued, not deleted."""

    def _check_log_dir_exists(self) -> None:
        if self._fs.isfile(self.metrics_file_path):
            with open(self.metrics_file_path, newline="") as f:
                self.metrics_keys = next(csv.reader(f), [])

    def restart(self) -> None:
        """Forget the file and everything written or pending: the next save writes a new one."""
        self.metrics, self.metrics_keys = [], []
        if self._fs.isfile(self.metrics_file_path):
            self._fs.rm(self.metrics_file_path)

    def keep_until(self, step: int) -> None:
        """Drop the rows logged after ``step`` (for a checkpoint that carries no record of its metrics)."""
        if not self._fs.isfile(self.metrics_file_path):
            return
        with open(self.metrics_file_path, newline="") as f:
            rows = [row for row in csv.DictReader(f) if not row.get("step") or int(row["step"]) <= step]
        with open(self.metrics_file_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.metrics_keys)
            writer.writeheader()
            writer.writerows(rows)


def picture_file(folder: Path, key: str, step: Optional[int], index: int = 0) -> Path:
    """Where a logger without images of its own writes picture ``index`` of ``key`` logged at
    ``step``: ``<folder>/pictures/<key>/step-<step>.png`` (a key's ``/`` are folders)."""
    name = f"step-{step if step is not None else 0:06d}" + (f"-{index}" if index else "")
    return folder / "pictures" / key / f"{name}.png"


def write_pictures(folder: Path, key: str, images: list[Any], step: Optional[int]) -> None:
    """Each (H, W, 3) uint8 image (or PNG file) as a PNG file at :func:`picture_file`, atomically."""
    import numpy as np
    from PIL import Image

    from .runs.files import atomic_file

    for index, image in enumerate(images):
        picture = Image.open(image) if isinstance(image, (str, Path)) else Image.fromarray(np.asarray(image))
        with atomic_file(picture_file(folder, key, step, index)) as file:
            picture.save(file, format="PNG")


class CSVLogger(_CSVLogger):
    """Lightning's CSV logger writing ``metrics.csv`` straight into the run folder, and the pictures
    it is given as PNG files beside it (:func:`picture_file`). It remembers
    the numbers it was given (:attr:`logged`, kept in every checkpoint), and a resumed ``fit``
    writes the file anew from the checkpoint's record, so that it holds exactly what was logged
    up to the checkpoint (rows a killed process wrote after it, or never wrote out, do not matter)."""

    def __init__(
        self,
        save_dir: Optional[str] = None,
        name: str = "",
        version: str = "",
        prefix: str = "",
        flush_logs_every_n_steps: PositiveInt = 100,
    ) -> None:
        super().__init__(
            save_dir=save_dir or ".",
            name=name,
            version=version,
            prefix=prefix,
            flush_logs_every_n_steps=flush_logs_every_n_steps,
        )
        self.logged: list = []

    @property
    @rank_zero_experiment
    def experiment(self) -> _AppendingWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _AppendingWriter(log_dir=self.log_dir)
        return self._experiment

    @rank_zero_only
    def log_metrics(self, metrics: dict[str, Any], step: Optional[int] = None) -> None:
        record(self.logged, metrics, step)
        super().log_metrics(metrics, step)

    @rank_zero_only
    def log_image(self, key: str, images: list[Any], step: Optional[int] = None, **kwargs: Any) -> None:
        """The pictures as PNG files in the run folder (captions are drawn in them)."""
        write_pictures(Path(self.log_dir), key, images, step)

    @rank_zero_only
    def resume_at(self, step: int, logged: Optional[list]) -> None:
        """A resumed fit continues at ``step``: ``metrics.csv`` is written anew from ``logged``
        (None: a checkpoint of an older version, which carries no record: the rows after ``step``
        are dropped)."""
        if logged is None:
            self.experiment.keep_until(step)
            return
        self.experiment.restart()
        self.logged = []
        for row_step, metrics in logged:
            self.log_metrics(metrics, row_step)
        self.save()


class TensorBoardLogger(_TensorBoardLogger):
    """Lightning's TensorBoard logger (through ``tensorboardX``), writing into
    ``<run folder>/tensorboard`` (``tensorboard --logdir runs`` shows every run), with the pictures
    as TensorBoard images: pictures and curves without a service or an account."""

    def __init__(self, save_dir: Optional[str] = None, name: str = "tensorboard", version: str = "", **kwargs: Any):
        super().__init__(save_dir=save_dir or ".", name=name, version=version, **kwargs)

    @rank_zero_only
    def log_image(self, key: str, images: list[Any], step: Optional[int] = None, **kwargs: Any) -> None:
        """Each (H, W, 3) uint8 image (or PNG file) under ``key`` (``key/<k>`` for more than one)."""
        import numpy as np
        from PIL import Image

        for index, image in enumerate(images):
            pixels = np.asarray(Image.open(image).convert("RGB")) if isinstance(image, (str, Path)) else image
            tag = key if len(images) == 1 else f"{key}/{index}"
            self.experiment.add_image(tag, np.asarray(pixels), global_step=step, dataformats="HWC")


def continue_fit_run(logger_config: Any, fit_run: Path, stage: str) -> None:
    """Point every configured W&B logger of a ``stage`` (validate, test, predict, evaluate) of a
    checkpoint of ``fit_run`` at that fit's W&B run (``run_of``, ``job_type``), unless set."""
    for spec in logger_config if isinstance(logger_config, list) else [logger_config]:
        init_args = getattr(spec, "init_args", None)
        if init_args is not None and str(getattr(spec, "class_path", "")).endswith(".WandbLogger"):
            if init_args.get("run_of") is None:
                init_args.run_of = str(fit_run)
            if init_args.get("job_type") is None:
                init_args.job_type = stage


def logs_at(trainer: Any, step: int) -> bool:
    """Whether Lightning's loggers take training step ``step`` of ``trainer`` (counted from 1; a
    step is an optimizer step): every ``trainer.log_every_n_steps`` steps (never when it is 0),
    and every step once the fit is stopping. Lightning's own rule (its logger connector's
    ``should_update_logs``) from the trainer's public state; tests/test_lightning_pins.py checks
    that the two agree."""
    every = trainer.log_every_n_steps
    return every > 0 and (step % every == 0 or trainer.should_stop)


def metrics_step(trainer: Any) -> int:
    """The step at which Lightning's loggers get the metrics logged now (its logger connector's count
    of the training batches that stepped; a validation inside ``fit`` logs at one less than
    ``trainer.global_step``), so that pictures land beside the numbers they go with.
    tests/test_lightning_pins.py checks the two agree."""
    return trainer.fit_loop.epoch_loop._batches_that_stepped
