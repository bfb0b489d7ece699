"""Every key the command line accepts, with its declared domain: read from the parsers themselves.

:func:`fit_parser` is the parser of ``python -m framework fit`` (the trainer's, the top level's
and the callbacks' keys); :func:`class_keys` walks a parser built for one class, which is what
the command line builds for the class a config names (``model``, ``task``, ``data``, a block
given as a spec, a logger). The optimizers' and schedules' keys belong to torch's classes and
are declared by name in :mod:`framework.commands.fit.config_values`.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args, get_origin

import torch
from jsonargparse import ArgumentParser
from lightning.pytorch import LightningDataModule
from lightning.pytorch.loggers import Logger

ROOT = Path(__file__).resolve().parents[1]
#: Every domain package, found in the folder (a new domain is walked without a line written here).
DOMAINS = sorted(path.parent.name for path in (ROOT / "domains").glob("*/__init__.py"))

#: Keys that are free-form by nature, by parameter name, with why: a folder, a name, a pattern.
FREE_FORM: dict[str, str] = {
    "root": "a data folder",
    "default_root_dir": "a folder",
    "run_dir": "a folder",
    "save_dir": "a folder",
    "dirpath": "a folder",
    "experiment": "a name for runs/<experiment>/",
    "project": "a W&B project's name",
    "name": "a run's name",
    "version": "a run's version",
    "prefix": "a prefix of metric names",
    "group": "a W&B group's name",
    "job_type": "a W&B job type",
    "run_of": "a fit's run folder",
    "key_prefix": "the prefix of a run's W&B keys (framework.loggers.key_prefix)",
    "entity": "a W&B entity",
    "id": "a W&B run's id",
    "tags": "W&B tags",
    "notes": "W&B notes",
    "log_model": "W&B's choice of checkpoints (true, false or 'all')",
    "checkpoint_name": "a W&B artifact's name",
    "filename": "a checkpoint's file name pattern",
    "monitor": "a logged metric's name, checked against the task's metrics when the run starts",
    "strategy": "a Lightning strategy's registry name or class path",
    "max_time": "a duration, DD:HH:MM:SS",
    "model_registry": "a model registry's name",
    "ckpt_path": "a checkpoint file",
    "weights_from": "a checkpoint file",
    "config": "a config file",
    "blocks": "glob patterns over module names, or registry names",
    "ablation_blocks": "glob patterns over module names, or registry names",
    "attention_backend": "a path's name, or {pattern: path}: checked against the blocks when the model is built",
    "attention": "a block: checked against the registry as it is parsed",
    "attention_collapse.loss": "a logged metric's name",
    "predict_file": "a file of inputs to predict",
    "LabelledText.splits": "file names under the data folder",
    "LabelledText.encoding": "a Python codec's name",
    "backbone": "a timm model's name, checked against timm's models when the model is built",
    "ImageFolderClassification.folder": "a folder's name",
    "test_speakers": "speakers' names, checked against the data",
    "SpeechCommands.words": "words, checked against the data",
    "SpeechCommands.version": "the data set's folder name",
    "HANClassifier.metapaths": "meta-path names, filled in from the data and checked against it",
    "UserItemSequences.path": "a file, absolute or under the data folder",
    "WandbLogger.dir": "a folder",
    "WandbLogger.config_exclude_keys": "config keys' names",
    "WandbLogger.config_include_keys": "config keys' names",
    "WandbLogger.resume_from": "a W&B run and step",
    "WandbLogger.fork_from": "a W&B run and step",
    "WandbLogger.settings": "W&B's own settings",
}


def free_form(key: Key) -> bool:
    """Whether a key is on :data:`FREE_FORM`: by its name, or qualified by its section or class."""
    full = f"{key.where}.{key.name}"
    return any(full.endswith("." + entry) for entry in FREE_FORM)


class Key(NamedTuple):
    """One key: where it is (``trainer.max_epochs``, ``domains.demo.SequenceClassifier.dim``), its type."""

    where: str
    name: str
    kind: Any


def declared(kind: Any) -> bool:
    """Whether a type states a domain: a bool, a Literal, an Enum, a type of
    :mod:`framework.values`, a class (a subclass spec, a block name), or a container or union
    of these; not a bare int, float or str."""
    if kind in (int, float, str):
        return False
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal or kind in (bool, type(None), Any):
        return True
    if origin is not None and args:
        if origin in (Callable, typing.Callable) or str(origin).endswith("Callable"):
            return True
        if origin in (dict, Mapping):  # keyword arguments passed through: their values' types count
            return declared(args[-1])
        return all(declared(arg) for arg in args if arg is not Ellipsis)
    return isinstance(kind, type) or inspect.isclass(kind)


def walk(parser: ArgumentParser, where: str) -> Iterator[Key]:
    """The typed keys of a parser (subclass specs are keys of other parsers: their classes are walked alone)."""
    for action in parser._actions:
        kind = getattr(action, "_typehint", None)
        if kind is None or action.dest in ("help", "config") or action.dest.endswith(".help"):
            continue
        yield Key(where, action.dest, kind)


def class_keys(cls: type) -> list[Key]:
    """The keys of one class, as the command line builds them (``--model.init_args.<key>``)."""
    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(cls, "x", fail_untyped=False, sub_configs=True)
    where = f"{cls.__module__}.{cls.__qualname__}"
    return [key._replace(name=key.name.removeprefix("x.")) for key in walk(parser, where)]


@cache
def parsing_cli() -> Any:
    """A ``fit`` command line that parses and stops there (nothing built): its ``parser`` and
    ``parse_arguments`` serve any number of parses, as a run's would."""
    from framework.commands.fit import FrameworkCLI

    class Parsed(Exception):
        pass

    class ParseOnly(FrameworkCLI):
        def before_instantiate_classes(self) -> None:
            raise Parsed

    cli = ParseOnly.__new__(ParseOnly)
    try:
        cli.__init__(args=["fit", "--config", str(ROOT / "domains/demo/demo.yaml")])
    except Parsed:
        pass
    return cli


def fit_parser() -> ArgumentParser:
    """The parser of ``fit``, as a run builds it."""
    return parsing_cli().parser._subcommands_action._name_parser_map["fit"]


def configurable_classes() -> list[type]:
    """Every class a config can name and this project defines: the domains' models, tasks and data
    modules, the core's tasks, the loggers, and every registered attention block."""
    import importlib

    from torch import nn

    from framework import attention, loggers, tasks

    found: dict[type, None] = {}
    for name in DOMAINS:
        module = importlib.import_module(f"domains.{name}")
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isclass(obj) and issubclass(obj, (nn.Module, tasks.Task, LightningDataModule)):
                found[obj] = None
    for obj in (tasks.Classification, loggers.WandbLogger, loggers.CSVLogger):
        found[obj] = None
    for name in attention.available():
        builder = attention.info(name).builder
        if inspect.isclass(builder):
            found[builder] = None
    return [cls for cls in found if not issubclass(cls, Logger) or cls.__module__.startswith("framework")]


def torch_classes() -> tuple[list[type], list[type]]:
    """torch's optimizers and schedules that a config can name with plain values."""
    optimizers = [
        obj
        for obj in vars(torch.optim).values()
        if inspect.isclass(obj) and issubclass(obj, torch.optim.Optimizer) and obj is not torch.optim.Optimizer
    ]
    schedules = [
        obj
        for obj in vars(torch.optim.lr_scheduler).values()
        if inspect.isclass(obj)
        and issubclass(obj, torch.optim.lr_scheduler.LRScheduler)
        and not obj.__name__.startswith("_")
        and obj.__name__ not in NEEDS_OBJECTS
    ]
    return optimizers, schedules


#: Schedules that take objects a config cannot write (functions, other schedules).
NEEDS_OBJECTS = ("LRScheduler", "LambdaLR", "MultiplicativeLR", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau")
