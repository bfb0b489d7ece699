"""Loggers whose files land in the run folder, and a W&B logger that never needs a network."""

from __future__ import annotations

import csv
import hashlib
import netrc
import os
import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Optional, Union, get_args
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from lightning.pytorch.loggers import CSVLogger as _CSVLogger
from lightning.pytorch.loggers import TensorBoardLogger as _TensorBoardLogger
from lightning.pytorch.loggers import WandbLogger as _WandbLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loggers.logger import rank_zero_experiment
from lightning.pytorch.utilities import rank_zero_info, rank_zero_only, rank_zero_warn

from .errors import ConfigError
from .values import NonNegativeInt, PositiveInt

REACH_TIMEOUT = 3.0  # seconds the W&B server gets to accept a connection before a run goes offline
INIT_TIMEOUT = 15.0  # seconds wandb.init may take online (wandb's default is 90); WANDB_INIT_TIMEOUT overrides
#: The status Lightning's SLURM auto-requeue (SIGUSR1) finalizes the loggers with while the run goes on: the job
#: requeued, SLURM stops it next (SIGTERM, which ends the W&B run); the requeue failed, it trains on, in the same run.
REQUEUE_STATUS = "finished"
#: The commands whose W&B keys are the task's own (``val/acc``, ``test/acc``): so that no command's numbers take
#: another's keys, any other command's carry its name (``evaluate/test/acc``, ``validate/val/acc``), and an
#: ablated test's its ablation (``ablation=uniform/test/acc``; :func:`key_prefix`).
OWN_KEYS = ("fit", "test")
#: The logger's arguments that name this very run (its folder, the fit it belongs to, its keys): a config written
#: for the next run leaves them unset.
RUN_ARGS = ("save_dir", "run_of", "job_type", "at_step", "key_prefix")


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
    * ``run_of``: a ``validate``, ``test``, ``predict`` or ``evaluate`` of a fit's checkpoint is a W&B run of
      its own in the fit's group (the fit's run id), its ``job_type`` the command, the fit's id, folder and
      last step in its config (``fit``), its numbers logged at the fit's last step (``at_step``) under keys
      of its own (``key_prefix``, :func:`key_prefix`), so that an ablated test never takes ``test/acc``.
      Each run's offline record is whole by itself (``wandb sync`` uploads each); online, the fit's run
      summary takes the run's last numbers too (:meth:`update_fit_summary`). The CLI sets these.
    * The run's config is the resolved config the CLI sends (:meth:`log_config`); Lightning's flat copy of
      the data module's arguments beside it is left out.
    * ``log_model``: checkpoints become W&B artifacts (Lightning's: ``True`` at the end of the fit,
      ``"all"`` as they are written).
    """

    def __init__(
        self,
        name: Optional[str] = None,
        save_dir: Optional[str] = None,
        project: str = "attention-framework",
        offline: Optional[bool] = None,
        id: Optional[str] = None,
        log_model: Union[bool, Literal["all"]] = False,
        run_of: Optional[str] = None,
        job_type: Optional[str] = None,
        at_step: Optional[NonNegativeInt] = None,
        key_prefix: str = "",
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
        folder = Path(save_dir).resolve() if save_dir else None
        id = id or (_run_id(folder) if folder else None)
        #: the W&B id of the fit whose checkpoint this run validates, tests or evaluates (None: no such fit)
        self.fit_id = _run_id(Path(run_of).resolve()) if run_of else None
        if self.fit_id:
            fit = {"run": self.fit_id, "dir": str(Path(run_of).resolve()), "step": at_step}
            kwargs["config"] = {**kwargs.get("config", {}), "fit": fit}
        # a fit heads the group its tests join, unless a comparison groups its fits (WANDB_RUN_GROUP)
        group = self.fit_id or (id if job_type == "fit" and "WANDB_RUN_GROUP" not in os.environ else None)
        if group:
            kwargs.setdefault("group", group)
        if job_type:
            kwargs["job_type"] = job_type
        #: the step this run's numbers are logged at (None: the trainer's), and the prefix of their keys
        self.at_step, self.key_prefix = at_step, key_prefix
        #: finish the W&B run when a trainer stage ends (False: the caller finalizes it)
        self.finish_with_stage = True
        #: whether the run's config is the CLI's resolved one (:meth:`log_config`)
        self.config_logged = False
        super().__init__(
            name=name or (f"{folder.parent.name}/{folder.name}" if folder else None),
            save_dir=save_dir or ".",
            project=project,
            id=id,
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
            self.update_fit_summary()
            self._experiment.finish()
            self._experiment = None

    @rank_zero_only
    def log_config(self, config: dict[str, Any]) -> None:
        """The run's whole resolved config, nested by section (Lightning's flat hyper-parameters are left out)."""
        self.experiment.config.update(config, allow_val_change=True)
        self.config_logged = True

    @rank_zero_only
    def log_hyperparams(self, params: Any) -> None:
        """Lightning's, unless the run's config is the CLI's (:meth:`log_config`), which holds them all: the
        data module's arguments would be repeated flat beside their ``data`` section."""
        if not self.config_logged:
            super().log_hyperparams(params)

    @rank_zero_only
    def log_metrics(self, metrics: dict[str, Any], step: Optional[int] = None) -> None:
        """Lightning's, remembering the numbers logged (:attr:`logged`, kept in every checkpoint;
        pictures, which ``log_image`` passes through here, are not). A run of a fit's checkpoint logs
        at the fit's last step (:attr:`at_step`), its keys prefixed (:attr:`key_prefix`), without the
        epoch of its own trainer (always 0)."""
        if self.at_step is not None:
            metrics, step = {name: value for name, value in metrics.items() if name != "epoch"}, self.at_step
        metrics = {f"{self.key_prefix}{name}": value for name, value in metrics.items()}
        record(self.logged, metrics, step)
        super().log_metrics(metrics, step)

    def update_fit_summary(self) -> None:
        """Online, the summary of the fit's run (:attr:`fit_id`) takes the last value of each number this
        run logged, so that the fit's page shows its test beside its training; a failure is one warning.
        Offline there is no server to ask: each run's record is uploaded by ``wandb sync`` as it is."""
        run = self._experiment
        if not self.fit_id or run is None or run.offline or not self.logged:
            return
        import wandb

        latest = {name: value for _, numbers in self.logged for name, value in numbers.items()}
        try:
            wandb.Api().run(f"{run.entity}/{run.project}/{self.fit_id}").summary.update(latest)
        except Exception as error:  # the fit's summary must never fail the run that tested it
            said = f"{type(error).__name__}: {error}"
            rank_zero_warn(f"W&B: the summary of the fit's run {self.fit_id} was not updated ({said})")

    @rank_zero_only
    def resume_at(self, step: int, logged: Optional[list], recorded: bool = False) -> None:
        """A resumed fit continues at ``step``; offline, into a new record of the run, so that
        ``wandb sync <run>/wandb/offline-run-*`` uploads each step once:

        * ``recorded``: the earlier process closed its record at ``step`` (a finished fit extended, or
          one stopped by a signal): the new record continues it, nothing is logged again.
        * otherwise (a killed process, whose record W&B writes out in blocks and may hold anything up to
          past the checkpoint; or a resume from an earlier checkpoint): the metrics logged before the
          checkpoint are logged again, the new record holds the whole run, and the earlier records of
          the run are set aside as ``wandb/superseded-offline-run-*``.

        Online, the server has every step already."""
        self.logged, logged = [], logged or []
        offline = self._wandb_init.get("mode") == "offline" or os.environ.get("WANDB_MODE") == "offline"
        if not offline or recorded:
            self.logged = [list(row) for row in logged]
            return
        current = Path(self.experiment.dir).parent
        for earlier in sorted(current.parent.glob(f"offline-run-*-{self.experiment.id}")):
            if earlier != current:
                earlier.rename(earlier.with_name(f"superseded-{earlier.name}"))
        for row_step, metrics in logged:
            self.log_metrics(metrics, row_step)


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
        from .runs.files import atomic_file

        if not self._fs.isfile(self.metrics_file_path):
            return
        with open(self.metrics_file_path, newline="") as f:
            rows = [row for row in csv.DictReader(f) if not row.get("step") or int(row["step"]) <= step]
        with atomic_file(Path(self.metrics_file_path), "w", newline="") as f:  # a kill keeps the whole history
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
    def resume_at(self, step: int, logged: Optional[list], recorded: bool = False) -> None:
        """A resumed fit continues at ``step``: ``metrics.csv`` is written anew from ``logged``
        (None: a checkpoint of an older version, which carries no record: the rows after ``step``
        are dropped), whether or not the earlier process closed it (``recorded``)."""
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


def key_prefix(stage: str, ablation: Optional[str] = None, blocks: Sequence[str] = ()) -> str:
    """The prefix of the keys a ``stage`` logs to W&B (:data:`OWN_KEYS`); a test with ``--ablation``
    adds its mode and blocks (``ablation=uniform/``, ``ablation=uniform[encoder.layers.0.*]/``)."""
    prefix = "" if stage in OWN_KEYS else f"{stage}/"
    if ablation is not None:
        prefix += f"ablation={ablation}" + (f"[{','.join(blocks)}]" if blocks else "") + "/"
    return prefix


def join_fit_run(logger_config: Any, stage: str, fit_run: Optional[Path], fit_step: Optional[int], prefix: str) -> None:
    """Point every configured W&B logger of a ``stage`` (fit, validate, test, predict, evaluate) at its job
    type and keys (``job_type``, ``key_prefix``) and, for a checkpoint of ``fit_run``, at that fit's group
    and last step (``run_of``, ``at_step``), where the config leaves them unset."""
    for spec in logger_config if isinstance(logger_config, list) else [logger_config]:
        init_args = getattr(spec, "init_args", None)
        if init_args is not None and str(getattr(spec, "class_path", "")).endswith(".WandbLogger"):
            given = {"job_type": stage, "key_prefix": prefix}
            if fit_run is not None:
                given.update(run_of=str(fit_run), at_step=fit_step)
            for key, value in given.items():
                if not init_args.get(key):
                    init_args[key] = value


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
