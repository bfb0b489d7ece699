"""Checkpoints: written atomically (a crash mid-write never leaves a truncated file, and no
checkpoint ever holds non-finite weights), and read back with the model and task configs they
carry (:func:`config_from_checkpoint`), which is how ``--ckpt_path`` rebuilds the right network."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO
from torch import Tensor

if TYPE_CHECKING:
    from jsonargparse import ArgumentParser, Namespace

from .errors import CheckpointError, ConfigError, NonFiniteError, parser_message
from .runs import run_dir_of_checkpoint

#: Where a checkpoint keeps the config of the data it was trained on (beside the model's and task's
#: hyper-parameters, which rebuild the module).
DATA_CONFIG_KEY = "data_config"


def non_finite_weights(state_dict: dict[str, Any]) -> list[str]:
    """Names of the floating-point tensors of a state dict that hold a NaN or an infinity."""
    return [
        name
        for name, value in state_dict.items()
        if isinstance(value, Tensor) and value.is_floating_point() and not torch.isfinite(value).all()
    ]


class AtomicCheckpointIO(TorchCheckpointIO):
    """Save to a temporary file in the same folder, fsync, then rename over the target.

    ``os.replace`` is atomic on POSIX and Windows, so ``best.ckpt`` and ``last.ckpt`` are
    always either the previous complete checkpoint or the new complete one: a full disk or a
    kill while writing leaves the previous one in place (the error names the file). Weights
    holding a NaN or an infinity are refused, so a diverged run never replaces a good
    checkpoint (:class:`~framework.callbacks.NonFiniteGuard` normally stops it first).
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Optional[Any] = None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options, got {storage_options!r}")
        path = Path(path)
        if bad := non_finite_weights(checkpoint.get("state_dict", {})):
            raise NonFiniteError(
                f"refusing to write {path}: the weights {', '.join(bad[:3])} hold NaN or infinite "
                "values (the previous checkpoint there is kept)"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        try:
            with open(partial, "wb") as f:
                writer = RecordingWriter(f)
                torch.save(checkpoint, writer)
                f.flush()
                os.fsync(f.fileno())
            os.replace(partial, path)
        except (OSError, RuntimeError) as err:  # a write that failed inside torch.save surfaces as a RuntimeError
            cause = writer.error if isinstance(err, RuntimeError) and writer.error is not None else err
            reason = getattr(cause, "strerror", None) or first_line(cause)
            raise CheckpointError(
                f"could not write the checkpoint {path}: {reason}; the previous checkpoint there, if any, is intact"
            ) from err
        finally:
            partial.unlink(missing_ok=True)


class RecordingWriter:
    """A binary file for ``torch.save`` that keeps the operating system's error of a failed write:
    torch's zip writer replaces it by "unexpected pos ...", which never says "no space left"."""

    def __init__(self, file: Any) -> None:
        self.file, self.error = file, None

    def write(self, data: Any) -> int:
        try:
            return self.file.write(data)
        except OSError as error:
            self.error = error
            raise

    def flush(self) -> None:
        self.file.flush()


def first_line(error: BaseException) -> str:
    """The first line of an error's message, or its type's name when it has none."""
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else type(error).__name__


def config_from_checkpoint(
    parser: ArgumentParser, config: Namespace, ckpt_path: Path, argv: list[str], subcommand: str
) -> Namespace:
    """``config`` with the model and task configs the checkpoint carries; the ``--task.*`` flags of
    ``argv`` win over the checkpoint's, ``--model.*`` flags that would change its model are refused
    (its weights need that very network), naming them.

    A checkpoint of another experiment is refused, naming both: a ``fit`` resumes only a
    checkpoint whose model, task and data classes are the config's, and ``validate``, ``test``,
    ``predict`` and ``evaluate`` (which rebuild the model and task from the checkpoint) only one
    whose data class is the config's.
    """
    from jsonargparse import ArgumentError

    hparams = read_checkpoint_configs(ckpt_path)
    check_same_experiment(config, hparams, ckpt_path, subcommand)
    given = {key: hparams[key] for key in ("model", "task")}
    parser.exit_on_error = False  # a failure here is about the checkpoint, said as such
    try:
        config = parser.parse_object(given, config)
    except (ArgumentError, ValueError, TypeError) as err:
        raise CheckpointError(
            f"{ckpt_path}: its model or task config no longer fits the code "
            f"({given['model'].get('class_path')}): {parser_message(str(err))}"
        ) from None
    finally:
        parser.exit_on_error = True
    model_flags = _flags(argv, "model")
    if model_flags:
        flagged = parser.parse_args(model_flags, namespace=config.clone()).model
        if flagged != config.model:
            names = ", ".join(flag for flag in model_flags if flag.startswith("--"))
            raise ConfigError(
                f"{names}: the model is rebuilt from the checkpoint {ckpt_path}, whose model "
                "differs, so these flags would be ignored; fit a model with them to evaluate it"
            )
    task_flags = _flags(argv, "task")
    return parser.parse_args(task_flags, namespace=config.clone()) if task_flags else config


def _class_of(section: Any) -> Optional[str]:
    if section is None:
        return None
    return section.get("class_path") if hasattr(section, "get") else None


def check_same_experiment(config: Namespace, hparams: dict[str, Any], ckpt_path: Path, subcommand: str) -> None:
    """Refuse a checkpoint whose classes differ from the config's (see :func:`config_from_checkpoint`)."""
    sections = ("model", "task", "data") if subcommand == "fit" else ("data",)
    for section in sections:
        theirs, ours = _class_of(hparams.get(section)), _class_of(config.get(section))
        if theirs and ours and theirs != ours:
            run = run_dir_of_checkpoint(str(ckpt_path))
            config_file = f"its run's config {run / 'config.yaml'}" if run else "the config it was trained with"
            instead = (
                "fit afresh without --ckpt_path" if subcommand == "fit" else "choose a checkpoint of this experiment"
            )
            raise ConfigError(
                f"--ckpt_path {ckpt_path} is a checkpoint of {section} {theirs}, but the config's "
                f"{section} is {ours}: {'resume' if subcommand == 'fit' else subcommand} it with "
                f"{config_file}, or {instead}"
            )


def read_checkpoint_configs(path: Path) -> dict[str, Any]:
    """The model and task configs a checkpoint of this CLI carries, and its data config (``data``,
    None in checkpoints written before it was kept); a clear error naming the file when it is
    missing, unreadable, or was written by something else."""
    if not path.is_file():
        raise CheckpointError(f"--ckpt_path {path}: no such file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"--ckpt_path {path} is empty (0 bytes): a copy that failed, or a file of another kind")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # pickle, zip and EOF errors all mean: this file is no (safe) checkpoint
        raise CheckpointError(
            f"--ckpt_path {path} is not a checkpoint torch can load safely ({type(err).__name__}: {first_line(err)})"
        ) from None
    hparams = checkpoint.get("hyper_parameters") if isinstance(checkpoint, dict) else None
    if not isinstance(hparams, dict) or not all(isinstance(hparams.get(key), dict) for key in ("model", "task")):
        raise CheckpointError(
            f"--ckpt_path {path} was not written by this framework's CLI: it carries no model and "
            "task configs (fit with `python -m framework fit` to make one)"
        )
    return {**hparams, "data": checkpoint.get(DATA_CONFIG_KEY)}


def _flags(argv: list[str], section: str) -> list[str]:
    """The command-line flags that set ``section`` or one of its keys, each with its value."""
    flags: list[str] = []
    for i, arg in enumerate(argv):
        name = arg.split("=", 1)[0]
        if name == f"--{section}" or name.startswith(f"--{section}."):
            has_value = "=" in arg or i + 1 == len(argv) or argv[i + 1].startswith("--")
            flags += [arg] if has_value else [arg, argv[i + 1]]
    return flags
