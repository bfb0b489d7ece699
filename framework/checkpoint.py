"""Checkpoints: written atomically (a crash mid-write never leaves a truncated file, and no
checkpoint ever holds non-finite weights), read by one reader (:func:`read_checkpoint`) that knows
what a checkpoint of this framework is and says what a file is otherwise, and read back with the
model and task configs they carry (:func:`config_from_checkpoint`), which is how ``--ckpt_path``
rebuilds the right network."""

from __future__ import annotations

import codecs
import pickletools
import re
import stat
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

import torch
import yaml
from lightning.pytorch.plugins.io import TorchCheckpointIO
from torch import Tensor

if TYPE_CHECKING:
    from jsonargparse import ArgumentParser, Namespace

from .errors import CheckpointError, ConfigError, NonFiniteError, parser_message
from .runs import atomic_file, run_dir_of_checkpoint

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
    """Save through :func:`framework.runs.atomic_file` (a temporary file in the same folder, fsync,
    rename over the target); load through :func:`read_checkpoint`.

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
        try:
            with atomic_file(path) as file:
                torch.save(checkpoint, file)
        except (OSError, RuntimeError) as err:  # RuntimeError: torch's writer failed for a reason of its own
            reason = err.strerror if isinstance(err, OSError) else first_line(err)
            raise CheckpointError(
                f"could not write the checkpoint {path}: {reason}; the previous checkpoint there, if any, is intact"
            ) from err

    def load_checkpoint(
        self, path: Any, map_location: Optional[Any] = "cpu", weights_only: Optional[bool] = None
    ) -> dict[str, Any]:
        """:func:`read_checkpoint` (safely, unless ``weights_only`` is False)."""
        return read_checkpoint(Path(path), map_location=map_location, weights_only=weights_only is not False)


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
            verb = {"fit": "resume it", "parity": "run parity on it"}.get(subcommand, f"{subcommand} it")
            raise ConfigError(
                f"--ckpt_path {ckpt_path} is a checkpoint of {section} {theirs}, but the config's "
                f"{section} is {ours}: {verb} with {config_file}, or {instead}"
            )


def read_checkpoint_configs(path: Path, name: str = "--ckpt_path") -> dict[str, Any]:
    """The model and task configs a checkpoint of this CLI carries, and its data config (``data``,
    None in checkpoints written before it was kept), read by :func:`read_checkpoint`, whose errors
    name ``name`` and the file."""
    checkpoint = read_checkpoint(path, name)
    return {**checkpoint["hyper_parameters"], "data": checkpoint.get(DATA_CONFIG_KEY)}


#: What a checkpoint of this framework holds beside its ``state_dict``: the configs of its model and
#: task under ``hyper_parameters`` (:meth:`~framework.TaskModule.remember_config`).
CONFIG_KEYS = ("model", "task")


def read_checkpoint(
    path: Path, name: str = "the checkpoint", map_location: Any = "cpu", weights_only: bool = True
) -> dict[str, Any]:
    """The checkpoint at ``path``, loaded by ``torch.load`` (safely: ``weights_only``), once it is
    known to be one of this framework: a dict with a ``state_dict`` of finite weights and the model
    and task configs (:data:`CONFIG_KEYS`) under ``hyper_parameters``. The one way a checkpoint is
    read: ``--ckpt_path`` of every command, ``--weights_from`` and the trainer's loads
    (:class:`AtomicCheckpointIO`).

    Anything else is a :class:`CheckpointError` that starts with ``name`` and the file and says
    what the file is (:func:`what_it_is`): missing, a folder or a device, empty, a YAML or text
    file, a zip archive or pickle cut short, a pickle that would run code, one of other objects, a
    state dict without configs, weights holding NaN (naming them); never torch's advice to load it
    unsafely.
    """
    path = Path(path)
    if (kind := file_kind(path)) is not None:
        raise CheckpointError(f"{name} {path}{kind}")
    try:
        with warnings.catch_warnings():  # torch's advice on a pickle's protocol: what it is is said below
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            checkpoint = torch.load(path, map_location=map_location, weights_only=weights_only)
    except Exception as err:  # torch's, pickle's and zip's errors all mean: no checkpoint torch can load safely
        if isinstance(err, OSError) and err.filename is not None:  # the system's, opening or reading the file
            raise CheckpointError(f"{name} {path} cannot be read: {err.strerror}") from None
        raise CheckpointError(f"{name} {path} {what_it_is(path, err)}") from None
    kind = container(path)
    if kind == "a torch file" and (damaged := damaged_part(path)) is not None:  # torch reads changed bytes silently
        raise CheckpointError(f"{name} {path} {damaged}")
    if (problem := not_a_checkpoint(checkpoint, kind)) is not None:
        raise CheckpointError(f"{name} {path} {problem}")
    if bad := non_finite_weights(checkpoint["state_dict"]):
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise CheckpointError(
            f"{name} {path} holds weights with NaN or infinite values ({', '.join(bad[:3])}{more}): its run "
            "diverged, or the file was altered; take an earlier checkpoint of the run"
        )
    return checkpoint


#: What a path that is no regular file is, by its ``stat`` type.
SPECIAL_FILES = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
}


def file_kind(path: Path) -> Optional[str]:
    """Why ``path`` cannot hold a checkpoint before it is opened (said after its name: missing, a
    folder, a device, empty), or None for a regular file with content."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return ": no such file"
    except OSError as err:
        return f" cannot be read: {err.strerror}"
    if stat.S_ISDIR(status.st_mode):
        kept = sorted(p.name for p in (path / "checkpoints").glob("*.ckpt"))
        inside = f" (a run folder: its checkpoints are {path / 'checkpoints'}/{', '.join(kept)})" if kept else ""
        return f" is a folder, not a checkpoint file{inside}"
    if not stat.S_ISREG(status.st_mode):
        return f" is {SPECIAL_FILES.get(stat.S_IFMT(status.st_mode), 'no regular file')}, not a checkpoint file"
    if status.st_size == 0:
        return " is empty (0 bytes): a copy that failed, or a file of another kind"
    return None


def container(path: Path) -> str:
    """What format ``torch.load`` read ``path`` in: its zip archive, else a pickle (its legacy format)."""
    with open(path, "rb") as file:
        return "a torch file" if file.read(4) == ZIP_MAGIC else "a pickle"


def damaged_part(path: Path) -> Optional[str]:
    """What is damaged in the zip archive of a torch file, said after its name: the first part whose
    bytes fail their checksum (torch itself reads such a part without a word), or None."""
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except (zipfile.BadZipFile, EOFError, ValueError) as err:
        return f"is a damaged torch file: its zip archive cannot be read ({first_line(err)})"
    if damaged is None:
        return None
    return f"is a damaged torch file: its part {damaged} fails its checksum (the file was altered, or copied wrong)"


def not_a_checkpoint(checkpoint: Any, kind: str) -> Optional[str]:
    """Why what ``torch.load`` gave is no checkpoint of this framework (said after the file's name), or None."""
    if not isinstance(checkpoint, dict):
        return f"is {kind} of a {type(checkpoint).__name__}, not a checkpoint"
    if not isinstance(checkpoint.get("state_dict"), dict):
        if checkpoint and all(isinstance(value, Tensor) for value in checkpoint.values()):
            return (
                f"is {kind} of a bare state dict (tensors alone), not a checkpoint: it carries "
                "no model and task configs (fit with `python -m framework fit` to make one)"
            )
        keys = ", ".join(map(str, list(checkpoint)[:4])) or "none"
        return f"is {kind} of a dict without a state_dict (its keys: {keys}), not a checkpoint"
    hparams = checkpoint.get("hyper_parameters")
    if not isinstance(hparams, dict) or not all(isinstance(hparams.get(key), dict) for key in CONFIG_KEYS):
        return (
            "was not written by this framework's CLI: it carries no model and task configs "
            "(fit with `python -m framework fit` to make one)"
        )
    return None


ZIP_MAGIC = b"PK\x03\x04"
#: How far into a file :func:`what_it_is` reads to tell what it is.
SNIFFED = 1 << 20
#: Formats of other files, by their first bytes.
MAGIC = {
    b"\x1f\x8b": "a gzip file",
    b"\x93NUMPY": "a NumPy array file (.npy)",
    b"\x89HDF\r\n\x1a\n": "an HDF5 file",
}
#: Config sections: a YAML file with one of them is a config.
CONFIG_SECTIONS = ("model", "task", "data", "trainer")
#: The top-level modules of what torch's own pickles refer to.
TORCH_PICKLED = ("torch", "collections", "builtins", "_codecs", "numpy")
#: Pickle operations that push a string, and those that push nothing.
PICKLED_STRINGS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING", "SHORT_BINSTRING"}
PICKLE_NO_PUSH = {"MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "FRAME", "PROTO", "POP", "STOP"}


def what_it_is(path: Path, error: BaseException) -> str:
    """What the file at ``path``, which ``torch.load`` failed to read (``error``), is, said after
    its name: a zip archive cut short or of other files, a damaged torch file, a pickle that would
    run code or is cut short, a YAML, JSON or text file, a file of a known other format. Nothing is
    unpickled: a pickle's code is named from its opcodes."""
    with open(path, "rb") as file:
        head = file.read(SNIFFED)
    size = path.stat().st_size
    if head.startswith(ZIP_MAGIC):
        return _what_zip_is(path, head, size, error)
    if head[:1] == b"\x80":  # a pickle of protocol 2 or later: torch's legacy format, or any pickle
        return _what_pickle_is(head, "a pickle", error, complete=size <= len(head))
    if kind := next((kind for magic, kind in MAGIC.items() if head.startswith(magic)), None):
        return f"is {kind}, not a checkpoint"
    length = int.from_bytes(head[:8], "little")
    if head[8:10] == b'{"' and 8 + length <= size:
        return (
            "is a safetensors file, not a checkpoint: weights alone, without the model and task configs "
            "(fit with `python -m framework fit` to make one)"
        )
    text = _text(head)
    if text is None:
        return f"is not a checkpoint: a binary file of another kind (it begins {head[:8].hex(' ')})"
    return _what_text_is(text, complete=size <= len(head))


def _what_zip_is(path: Path, head: bytes, size: int, error: BaseException) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            pickled = next((name for name in names if name.rpartition("/")[2] == "data.pkl"), None)
            if pickled is None:
                return f"is a zip archive of other files ({', '.join(names[:3])}), not a checkpoint"
            if (damaged := damaged_part(path)) is not None:
                return damaged
            return _what_pickle_is(archive.read(pickled), "a torch file", error, complete=True)
    except (zipfile.BadZipFile, EOFError, ValueError):
        name_length = int.from_bytes(head[26:28], "little")
        first = head[30 : 30 + name_length]
        kind = "a torch file" if first.endswith(b"data.pkl") or first.endswith(b".format_version") else "a zip archive"
        return (
            f"is {kind} cut short or damaged ({size} bytes; the end of the archive, which lists its parts, "
            "is missing or unreadable): a copy or a write that did not finish"
        )


def _what_pickle_is(data: bytes, kind: str, error: BaseException, complete: bool) -> str:
    """What a pickle (a file's, or a torch file's ``data.pkl``) that torch's safe load refused is."""
    scan = scan_pickle(data)
    foreign = [name for name in scan.names if name.split(".")[0] not in TORCH_PICKLED]
    if foreign:
        return (
            f"is {kind} that refers to {', '.join(dict.fromkeys(foreign[:3]))}, code that loading it would run "
            "(it was not loaded): not a checkpoint of this framework"
        )
    if not scan.whole and complete:
        return f"is {kind} cut short or damaged: not a checkpoint torch can read"
    holding = f" of a {scan.outer}" if scan.outer else ""
    return f"is {kind}{holding} that torch's safe load refuses ({_refusal(error)}): not a checkpoint of this framework"


class PickleScan(NamedTuple):
    """What a pickle's opcodes say, read without running it (:func:`scan_pickle`)."""

    #: the dotted names of the functions and classes it refers to: what unpickling it imports and calls
    names: list[str]
    #: whether it ends where a pickle ends
    whole: bool
    #: the type of the object it holds, where its first opcode says (``dict``, ``list`` ...)
    outer: Optional[str]


#: The type a pickle holds, by the first opcode that pushes something.
PICKLED_TYPES = {
    "EMPTY_DICT": "dict",
    "EMPTY_LIST": "list",
    "EMPTY_TUPLE": "tuple",
    "EMPTY_SET": "set",
    **dict.fromkeys(PICKLED_STRINGS, "string"),
    **dict.fromkeys(("BININT", "BININT1", "BININT2", "LONG1", "LONG4", "BINFLOAT"), "number"),
}


def scan_pickle(data: bytes) -> PickleScan:
    """Read a pickle's opcodes (never its objects): the globals it refers to, whether it is whole,
    the type it holds."""
    names: list[str] = []
    pushed: list[Optional[str]] = []  # what each operation pushed, where it was a string
    memo: dict[int, Optional[str]] = {}
    outer = None
    try:
        for index, (op, arg, _) in enumerate(pickletools.genops(data)):
            if op.name == "GLOBAL":
                names.append(str(arg).replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(pushed) >= 2 and None not in pushed[-2:]:
                names.append(f"{pushed[-2]}.{pushed[-1]}")
            if op.name == "MEMOIZE":
                memo[len(memo)] = pushed[-1] if pushed else None
            elif op.name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = pushed[-1] if pushed else None
            elif op.name in ("GET", "BINGET", "LONG_BINGET"):
                pushed.append(memo.get(arg))
            elif op.name not in PICKLE_NO_PUSH:
                if not pushed and not names and index <= 2:
                    outer = PICKLED_TYPES.get(op.name)
                pushed.append(arg if op.name in PICKLED_STRINGS else None)
    except (ValueError, KeyError, EOFError):  # cut short, or not a pickle after all
        return PickleScan(names, False, outer)
    return PickleScan(names, True, outer)


def _refusal(error: BaseException) -> str:
    """torch's reason for refusing a file, without its advice to load it unsafely."""
    found = re.search(r"WeightsUnpickler error:\s*(.+)", str(error))
    if found:
        return found.group(1).strip()
    said = first_line(error)
    return type(error).__name__ if "weights_only" in said else said


def _text(head: bytes) -> Optional[str]:
    """``head`` as UTF-8 text (its last character may be cut), or None for binary bytes (control
    characters other than white space included)."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return None
    return None if re.search(r"[\x00-\x08\x0e-\x1f]", text) else text


def _what_text_is(text: str, complete: bool) -> str:
    try:
        content = yaml.safe_load(text) if complete else None
    except yaml.YAMLError:
        content = None
    if isinstance(content, dict) and content:
        form = "a JSON file" if text.lstrip().startswith("{") else "a YAML file"
        keys = ", ".join(map(str, list(content)[:4]))
        hint = ": a config is given with --config" if any(key in content for key in CONFIG_SECTIONS) else ""
        return f"is {form} (its keys: {keys}), not a checkpoint{hint}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"is a text file, not a checkpoint (it begins {first[:60]!r})"


def _flags(argv: list[str], section: str) -> list[str]:
    """The command-line flags that set ``section`` or one of its keys, each with its value."""
    flags: list[str] = []
    for i, arg in enumerate(argv):
        name = arg.split("=", 1)[0]
        if name == f"--{section}" or name.startswith(f"--{section}."):
            has_value = "=" in arg or i + 1 == len(argv) or argv[i + 1].startswith("--")
            flags += [arg] if has_value else [arg, argv[i + 1]]
    return flags
