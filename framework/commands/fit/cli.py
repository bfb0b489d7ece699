"""The training command line (``python -m framework fit|validate|test|predict``): a LightningCLI
whose config names a model, a task and data.

    python -m framework fit --config domains/vision/ccnet.yaml --trainer.max_epochs=3
    python -m framework test --config runs/vision/ccnet/<run>/config.yaml \\
        --ckpt_path runs/vision/ccnet/<run>/checkpoints/best.ckpt

A config has the usual LightningCLI sections ``trainer``, ``data``, ``optimizer``,
``lr_scheduler``, ``seed_everything``, and two of this framework:

* ``model``: any ``nn.Module`` by ``class_path`` (the network; its ``attention`` argument
  takes a block name, so ``--model.attention=cbam`` swaps the block),
* ``task``: a :class:`~framework.tasks.Task` (loss, metrics, how a batch becomes predictions).

The CLI builds the one :class:`~framework.TaskModule` from the two, gives every run its own
folder (``runs/<experiment>/<time>_<subcommand>``, or ``--run_dir``) for checkpoints, config
and logs, writes checkpoints atomically, and prints a summary when ``fit`` ends.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, Optional, TypeVar, Union

import torch
import yaml
from jsonargparse import DefaultHelpFormatter, Namespace
from lightning.pytorch import LightningDataModule, Trainer
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.callbacks import ModelSummary as ModelSummaryBase
from lightning.pytorch.callbacks import ProgressBar as ProgressBarBase
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback
from lightning.pytorch.loggers import WandbLogger
from lightning.pytorch.plugins.io import CheckpointIO
from lightning.pytorch.utilities.exceptions import SIGTERMException
from torch import nn

from ... import loggers, provenance, quiet, runs, signals
from ...callbacks import (
    AttentionCollapse,
    AttentionMaps,
    AttentionStatistics,
    ModelSummary,
    NonFiniteGuard,
    PredictionWriter,
    ResumePoints,
    RunCheckpoint,
    RunEarlyStopping,
    RunSummary,
    StopAtBatchEnd,
    progress_bar,
)
from ...checkpoint import AtomicCheckpointIO, config_from_checkpoint
from ...data.limits import check_limits
from ...data.sizes import fill_sizes
from ...errors import TRACEBACK_ENV, ConfigError, explained, parser_message, traceback_requested
from ...evaluation.block_ablation import AblationMode
from ...optim import DecayOn, offered_in_groups
from ...task_module import CompileMode, TaskModule
from ...tasks import Task
from ...values import Seed
from ..help import Layout, style
from . import config_sections, help_groups, results_table
from .config_files import check_config_files
from .config_values import TRAINER, annotation, check_machine, declared_domain, expected, has_domain, violations
from .resume import check_resume, load_weights, recorded_config

PROG = "python -m framework"
T = TypeVar("T")
DESCRIPTION = "Train, validate, test or predict with attention models (`python -m framework --help`: every command)."
RUN = "runs/<experiment>/<run>"
#: Each subcommand's help: what it does, and examples (see :func:`framework.commands.help.style`).
HELP: dict[str, tuple[str, tuple[str, ...]]] = {
    "fit": (
        "Train a model. A config names the network (model: any nn.Module), the task (loss, metrics, "
        "predictions) and the data; flags override any of its keys. The run gets its own folder, "
        "runs/<experiment>/<time>_fit, with the resolved config, best.ckpt and last.ckpt, the loggers' "
        "files and summary.json.",
        (
            "--config domains/demo/demo.yaml",
            "--config domains/demo/demo.yaml --model.attention=none --trainer.max_epochs=3",
            "--config domains/vision/ccnet.yaml --config configs/trainer/gpu.yaml --config configs/logger/csv.yaml",
            f"--config {RUN}/config.yaml --ckpt_path {RUN}/checkpoints/last.ckpt   # resume a run",
        ),
    ),
    "validate": (
        "Validate a checkpoint on the validation split and print its metrics: the task's first, its "
        "losses next, the attention statistics last. The config and the model come from the "
        "checkpoint; --task.* flags change the task.",
        (f"--config {RUN}/config.yaml --ckpt_path {RUN}/checkpoints/best.ckpt",),
    ),
    "test": (
        "Test a checkpoint on the test split and print its metrics: the task's first, its losses "
        "next, the attention statistics last. The config and the model come from the checkpoint; "
        "--task.* flags change the task (--task.beam_size=5), --ablation tests it with its attention "
        "replaced.",
        (
            f"--config {RUN}/config.yaml --ckpt_path {RUN}/checkpoints/best.ckpt",
            f"--config {RUN}/config.yaml --ckpt_path {RUN}/checkpoints/best.ckpt --ablation uniform",
        ),
    ),
    "predict": (
        "Write a checkpoint's predictions on the predict split into its own run folder (one file per "
        "run, in the task's format). The config and the model come from the checkpoint.",
        (f"--config {RUN}/config.yaml --ckpt_path {RUN}/checkpoints/best.ckpt",),
    ),
}


class HelpFormatter(Layout, DefaultHelpFormatter):
    """jsonargparse's help (each option's type and default) in the shape every command's help has."""


#: ``ckpt_path`` values Lightning resolves itself (the checkpoint callback's files of this process).
LIGHTNING_CKPT_ALIASES = ("best", "last", "hpc", "registry")


class SaveConfig(SaveConfigCallback):
    """Write the resolved config into the run folder and send all of it to W&B (rank 0 only).

    The written file leaves out the run's own folders (``run_dir``, ``default_root_dir``,
    the checkpoint folder, the loggers' ``save_dir``), so that a ``test`` or another ``fit``
    started from it gets a folder of its own instead of writing into this run's.
    """

    def setup(self, trainer: Trainer, pl_module: Any, stage: str) -> None:
        full, self.config = self.config, _without_run_folders(self.config)
        try:
            super().setup(trainer, pl_module, stage)
        finally:
            self.config = full

    def save_config(self, trainer: Trainer, pl_module: Any, stage: str) -> None:
        wandb = [logger for logger in trainer.loggers if isinstance(logger, WandbLogger)]
        if not wandb:  # the dump below is a quarter of a second of jsonargparse: only for W&B
            return
        config = yaml.safe_load(self.parser.dump(self.config, skip_none=False))
        for logger in wandb:
            if isinstance(logger, loggers.WandbLogger):
                logger.log_config(config)
            else:
                logger.experiment.config.update(config, allow_val_change=True)


class Parser(LightningArgumentParser):
    """The CLI's parser: a config error is one line naming the key (the full message with
    ``FRAMEWORK_TRACEBACK=1``), instead of the usage and a nested report of every type tried."""

    def error(self, message: str, ex: Optional[Exception] = None) -> NoReturn:
        if traceback_requested(sys.argv[1:]) or not self.exit_on_error:
            super().error(message, ex)
        prog = self.prog.replace(" [options]", "")
        sys.stderr.write(
            f"error: {parser_message(message, lambda key: self.domain_of(key, message))}\n({prog} --help lists "
            f"the options; {TRACEBACK_ENV}=1 shows the parser's whole message)\n"
        )
        raise SystemExit(2)

    def domain_of(self, key: str, message: str) -> Optional[str]:
        """The declared domain, in words, of the key a parser's error names: from the table of a
        class this framework does not define (:mod:`.config_values`), from the annotation of the
        class whose argument it is (the error names its class_path), or from this parser's own
        argument; None where the key has no declared domain."""
        if (said := declared_domain(key)) is not None:
            return said
        found = re.findall(r"Problem with given class_path '([\w.]+)'", message)
        action = self._option_string_actions.get(f"--{key}")
        kind = getattr(action, "_typehint", None)
        if found:
            kind = annotation(found[-1], key.rpartition(".")[2])
        return expected(kind) if kind is not None and has_domain(kind) else None


#: The logger of every run whose configs name none: W&B (offline without an API key).
DEFAULT_LOGGER = {"class_path": "framework.loggers.WandbLogger", "init_args": {"project": "attention-framework"}}


def trainer_help() -> dict[str, str]:
    """Lightning's help of each of the trainer's arguments, from its docstring."""
    from docstring_parser import parse

    return {param.arg_name: param.description for param in parse(Trainer.__init__.__doc__ or "").params}


class FrameworkCLI(LightningCLI):
    """LightningCLI with a ``model`` (nn.Module) and a ``task`` instead of a LightningModule."""

    #: A command of its own (``evaluate`` ...), what it does and examples of it, for its help; None:
    #: LightningCLI's subcommands, whose help :data:`HELP` gives.
    command: Optional[str] = None
    description: str = DESCRIPTION
    examples: tuple[str, ...] = ()
    #: ``--print_config`` fills in the sizes and the monitored metric (building data and task).
    fill_printed_config = True

    def __init__(self, args: Any = None, run: bool = True) -> None:
        self.argv = [str(arg) for arg in (sys.argv[1:] if args is None else args)]
        config_sections.install()  # a section naming another class starts from that class's defaults
        quiet.install()  # libraries' messages that bury the user's
        with warnings.catch_warnings():  # the dispatcher hands over the command line after its own word
            warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
            super().__init__(
                save_config_callback=SaveConfig,
                save_config_kwargs={"overwrite": True},  # run folders are unique; a resumed run rewrites its own
                trainer_defaults={"callbacks": [RunSummary(), NonFiniteGuard(), PredictionWriter(), StopAtBatchEnd()]},
                parser_kwargs=self.help_kwargs(),
                seed_everything_default=0,
                parser_class=Parser,
                args=args,
                run=run,
            )

    def help_kwargs(self) -> dict[str, Any]:
        """The parsers' help in the shape of every command's (:mod:`framework.commands.help`): the
        command's own parser, or the chosen subcommand's (the main parser's help is the dispatcher's)."""
        if self.command is not None:
            return style(self.command, self.description, self.examples, formatter=HelpFormatter)
        main = {"prog": PROG, "description": self.description, "formatter_class": HelpFormatter}
        chosen = self.argv[0] if self.argv else None
        return {**main, chosen: style(chosen, *HELP[chosen], formatter=HelpFormatter)} if chosen in HELP else main

    def subcommands(self) -> dict[str, set[str]]:
        """LightningCLI's subcommands, cut to the one this command line runs: a parser is built
        for it alone (building all four took a second of every command's start-up). The
        dispatcher has checked the word; a command line without one keeps all four."""
        every = LightningCLI.subcommands()
        chosen = self.argv[0] if self.argv else None
        return {chosen: every[chosen]} if chosen in every else every

    def parse_arguments(self, parser: LightningArgumentParser, args: Any) -> None:
        """LightningCLI's, except that the help's option groups have titles that say what each
        section sets (:mod:`.help_groups`) and ``--print_config`` prints what a run would really
        use: the sizes the data states filled in, the checkpoint's ``monitor`` and ``mode`` from
        the task (building the data module and the task, not the model)."""
        help_groups.retitle(parser)
        argv = [str(arg) for arg in args] if isinstance(args, list) else None
        printing = [arg for arg in argv or [] if arg.split("=", 1)[0] == "--print_config"]
        if not printing or not self.fill_printed_config:
            super().parse_arguments(parser, args)
            return self.check_domains(parser)
        super().parse_arguments(parser, [arg for arg in argv if arg not in printing])
        self.check_domains(parser)
        subcommand = self.config.get("subcommand")  # None for the commands without one (evaluate, parity)
        config = self.config[subcommand] if subcommand else self.config
        resolve_run_values(config, instantiate_data(config.data))
        subparser = parser._subcommands_action._name_parser_map[subcommand] if subcommand else parser
        print(subparser.dump(config, skip_none="skip_null" in printing[0]), end="")
        raise SystemExit(0)

    def check_domains(self, parser: LightningArgumentParser) -> None:
        """The optimizer's and the schedule's values against their declared domains
        (:mod:`.config_values`): one line naming the key, status 2, as the parser's own types."""
        config = self.config[self.config.subcommand] if self.config.get("subcommand") else self.config
        if found := violations(config):
            parser.error(found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))

    def add_default_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument(
            "--seed_everything",
            type=Union[bool, Seed],
            default=self.seed_everything_default,
            help="The seed of the run's random numbers (true: a random one, false: none set).",
        )

    def add_core_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        # The trainer's keys that config_values.TRAINER declares are added with those types in
        # place of Lightning's (which types a batch limit Union[float, int], so "1" parsed as 1.0:
        # the whole epoch, not one batch), with Lightning's defaults and help.
        parser.add_class_arguments(
            self.trainer_class,
            "trainer",
            fail_untyped=False,
            instantiate=False,
            sub_configs=True,
            skip=set(TRAINER),
        )
        parser.set_defaults({"trainer.logger": DEFAULT_LOGGER})  # configs/logger/csv.yaml or a config's own replaces it
        defaults, helps = inspect.signature(self.trainer_class.__init__).parameters, trainer_help()
        for name, kind in TRAINER.items():
            parser.add_argument(f"--trainer.{name}", type=kind, default=defaults[name].default, help=helps.get(name))
        parser.add_subclass_arguments(nn.Module, "model", fail_untyped=False, help="The network (any nn.Module).")
        parser.add_subclass_arguments(Task, "task", fail_untyped=False, help="Loss, metrics and prediction.")
        parser.add_lightning_class_args(LightningDataModule, "data", subclass_mode=True)

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument(
            "--experiment",
            type=Optional[str],
            default=None,
            help="Name grouping runs under runs/<experiment>/ (default: the first --config's name).",
        )
        parser.add_argument(
            "--run_dir",
            type=Optional[str],
            default=None,
            help="Folder of this run (default: a new runs/<experiment>/<time>_<subcommand>).",
        )
        parser.add_argument(
            "--compile",
            type=Union[bool, CompileMode],
            default=False,
            help="Compile the model with torch.compile: true (its default mode) or a mode; "
            "reduce-overhead adds CUDA graphs, for models whose steps are launch-bound.",
        )
        parser.add_lightning_class_args(RunCheckpoint, "checkpoint")
        parser.set_defaults(
            {
                "checkpoint.filename": "best",
                "checkpoint.save_last": True,
                "checkpoint.enable_version_counter": False,
                "checkpoint.auto_insert_metric_name": False,
            }
        )
        parser.add_lightning_class_args(RunEarlyStopping, "early_stopping")  # off until its patience is set
        parser.add_lightning_class_args(AttentionMaps, "attention_maps")
        parser.add_lightning_class_args(AttentionStatistics, "attention_stats")
        parser.add_lightning_class_args(AttentionCollapse, "attention_collapse")
        parser.add_lightning_class_args(ResumePoints, "resume")
        parser.add_optimizer_args((torch.optim.Optimizer,))  # unset: TaskModule's default AdamW
        parser.add_argument(
            "--weight_decay_on",
            type=DecayOn,
            default="matrices",
            help="What the optimizer's weight_decay applies to: matrices (weight matrices and "
            "kernels; not biases, norm layers or embeddings) or all parameters.",
        )
        parser.add_argument(
            "--weights_from",
            type=Optional[str],
            default=None,
            help="fit only: a checkpoint whose model weights start a new run (its own optimizer, epochs and "
            "folder); --ckpt_path resumes the checkpoint's own run instead",
        )
        parser.add_argument(
            "--untrained",
            type=bool,
            default=False,
            help="validate, test or predict the model as configured, without a checkpoint",
        )
        parser.add_argument(
            "--attention_backend",
            type=Optional[Union[str, dict[str, str]]],
            default=None,
            help="The path the attention blocks run on: eager, sdpa, linear, flex, triton, portable "
            "or compiled for every block that has it, or per block {pattern: path} (globs over "
            "module names, or registry names); default: each block's own "
            "(framework.attention.backends, `python -m framework parity` compares them).",
        )
        parser.add_argument(
            "--traceback",
            type=bool,
            default=False,
            help="show the traceback of errors the framework explains in one line",
        )
        self.add_ablation_arguments(parser)

    def add_ablation_arguments(self, parser: LightningArgumentParser) -> None:
        """``--ablation`` and ``--ablation_blocks``, which ``test`` acts on (see :meth:`before_test`);
        every subcommand takes them, so that a test's written config starts any other run."""
        parser.add_argument(
            "--ablation",
            type=Optional[AblationMode],
            default=None,
            help="test only: attention weights replaced by uniform, random or permuted ones "
            "(framework.attention.ablation), or none: the blocks skipped, where a block's output "
            "has its input's shape",
        )
        parser.add_argument(
            "--ablation_blocks",
            type=list[str],
            default=[],
            help="the blocks --ablation changes: glob patterns over module names, or registry names (default: all)",
        )

    def before_test(self) -> None:
        """``--ablation``: the test runs with the chosen blocks ablated (checked against the model first)."""
        from ...attention import blocks_in
        from ...callbacks.ablation_switch import AblationSwitch

        config = self.config["test"]
        if config.get("ablation") is None:
            if config.get("ablation_blocks"):
                raise ConfigError("--ablation_blocks needs --ablation (uniform, random, permute or none)")
            return
        try:
            blocks_in(self.model.model, *config.ablation_blocks)
        except ValueError as err:
            raise ConfigError(f"--ablation_blocks: {err}") from None
        self.trainer.callbacks.append(AblationSwitch(config.ablation, config.ablation_blocks))

    def _ablation_is_for_test(self) -> None:
        if self.config[self.subcommand].get("ablation") is not None:
            raise ConfigError(f"--ablation applies to test (and evaluate), not to {self.subcommand}: unset it")

    before_fit = before_validate = before_predict = _ablation_is_for_test

    def _parse_ckpt_path(self) -> None:
        """A checkpoint written by this CLI carries its model and task configs: use them.

        The model's config always comes from the checkpoint (its weights need that very
        network), so ``--model.*`` flags that would change it are refused, naming them. The
        task's comes from the checkpoint too, except for the ``--task.*`` flags given on the
        command line, which win (``--task.beam_size=5`` at test time). A file that is no
        checkpoint of this CLI is an error naming it.
        """
        subcommand = self.config.get("subcommand")
        ckpt_path = subcommand and self.config[subcommand].get("ckpt_path")
        if not ckpt_path:
            return
        if ckpt_path in LIGHTNING_CKPT_ALIASES:  # names of this process's checkpoints: a new process has none
            raise ConfigError(
                f"--ckpt_path {ckpt_path}: give a checkpoint file, for example "
                f"runs/<experiment>/<run>/checkpoints/{'last' if ckpt_path == 'last' else 'best'}.ckpt "
                f"('{ckpt_path}' names a checkpoint of a fit in the same Python process)"
            )
        subparser = self.parser._subcommands_action._name_parser_map[subcommand]
        self.config[subcommand] = config_from_checkpoint(
            subparser, self.config[subcommand], Path(ckpt_path), self.argv, subcommand
        )

    def before_instantiate_classes(self) -> None:
        config = self.config[self.subcommand] if self.subcommand else self.config
        if self.subcommand in ("validate", "test", "predict") and not config.get("ckpt_path") and not config.untrained:
            raise ConfigError(
                f"{self.subcommand} needs --ckpt_path: a checkpoint of a fit, for example "
                "runs/<experiment>/<run>/checkpoints/best.ckpt (add --untrained=true to "
                f"{self.subcommand} the model as configured, without training)"
            )
        check_machine(config)
        check_limits(self.subcommand, config.trainer)
        if config.get("weights_only", False) is None:  # the framework's checkpoints load safely: say so to Lightning
            config.weights_only = True
        runs.place_run(config, self.subcommand or "run")

    def instantiate_classes(self) -> None:
        """Build data, model and task, wrap the last two in a TaskModule, then the trainer."""
        config = self.config[self.subcommand] if self.subcommand else self.config
        if config.get("lr_scheduler") and not config.get("optimizer"):
            self.parser.error(
                "lr_scheduler is set but optimizer is not: name the optimizer the schedule drives "
                "(for example --optimizer=torch.optim.AdamW --optimizer.lr=0.001)"
            )
        data = instantiate_data(config.data)  # first: it states the sizes the model and task leave unset
        resolve_run_values(config, data)
        without_data = self.config.clone()
        (without_data[self.subcommand] if self.subcommand else without_data).data = None
        self.config_init = self.parser.instantiate_classes(without_data)
        built = self.config_init[self.subcommand] if self.subcommand else self.config_init
        built.data = data
        task, self.datamodule = built.task, built.data
        self.model = TaskModule(built.model, task, compile=config.compile, weight_decay_on=config.weight_decay_on)
        run_text = self._run_config(config)
        run_config = yaml.safe_load(run_text)
        self.model.remember_config(
            model=_as_dict(config.model), task=_as_dict(config.task), compile=config.compile, run=run_config
        )
        if config.get("weights_from"):
            if self.subcommand != "fit" or config.get("ckpt_path"):
                raise ConfigError(
                    "--weights_from starts a new fit from a checkpoint's weights: give it to fit alone, "
                    "without --ckpt_path (which resumes the checkpoint's own run)"
                )
            load_weights(built.model, config.weights_from)
        self.model.data_config = _as_dict(config.data) if config.get("data") else None
        built.checkpoint = RunCheckpoint(**config.checkpoint.as_dict())  # monitor and mode resolved from the task
        built.early_stopping = RunEarlyStopping(**config.early_stopping.as_dict())  # so are early stopping's
        with warnings.catch_warnings(), offered_in_groups(self.model, config.weight_decay_on, config.get("optimizer")):
            warnings.filterwarnings("ignore", message=".*configure_optimizers` will be overridden")
            self._add_configure_optimizers_method_to_model(self.subcommand)  # the optimizer a config names
        self.trainer = self.instantiate_trainer()
        check_early_stopping(self.trainer, task)
        results_table.install(self.trainer, task)
        use_backends(
            built.model,
            config.get("attention_backend"),
            self.trainer.strategy.root_device,
            training=self.subcommand == "fit",
        )
        summary = next((callback for callback in self.trainer.callbacks if isinstance(callback, RunSummary)), None)
        if summary is not None and self.subcommand:
            summary.config_hash = provenance.config_hash(run_text)
        if summary is not None and self.subcommand == "fit" and config.get("ckpt_path"):
            recorded = recorded_config(config.ckpt_path)  # None: a checkpoint of an older version
            summary.pending_changes = check_resume(recorded, run_config, config.ckpt_path) if recorded else []

    def _run_config(self, config: Namespace) -> str:
        """The resolved config without what names this very run (its folders, the checkpoint it
        starts from), as YAML: what a checkpoint records, what equal runs hash equal by, what a
        resumed fit is compared with."""
        plain = _without_run_folders(config)
        if "ckpt_path" in plain:  # a subcommand's option: the CLI built without one (run=False) has none
            plain.ckpt_path = None
        parser = self.parser._subcommands_action._name_parser_map[self.subcommand] if self.subcommand else self.parser
        return parser.dump(plain, skip_none=False)

    def instantiate_trainer(self, **kwargs: Any) -> Trainer:
        """Lightning's trainer with atomic checkpoints, the progress display of the output (a bar that
        never syncs the device on a terminal, plain lines elsewhere: a log file) and a model summary
        without a FLOPs column of zeros."""
        trainer = self._get(self.config_init, "trainer")
        plugins = _as_list(trainer.get("plugins"))
        if not any(isinstance(p, CheckpointIO) for p in plugins):
            kwargs["plugins"] = [*plugins, AtomicCheckpointIO()]
        callbacks = _as_list(trainer.get("callbacks"))
        if trainer.get("enable_progress_bar") is not False and not any(
            isinstance(c, ProgressBarBase) for c in callbacks
        ):
            kwargs["callbacks"] = callbacks = [*callbacks, progress_bar(sys.stdout)]
        if trainer.get("enable_model_summary") is not False and not any(
            isinstance(c, ModelSummaryBase) for c in callbacks
        ):
            kwargs["callbacks"] = [*callbacks, ModelSummary()]
        return super().instantiate_trainer(**kwargs)


def resolve_run_values(config: Namespace, data: Optional[LightningDataModule]) -> None:
    """Fill in what the config leaves to the run, so that the printed and the saved config say what
    the run really uses: the sizes the data states (``model.vocab_size`` ...) and the checkpoint's
    ``monitor`` and ``mode``, which the task names when the config leaves ``monitor`` unset."""
    fill_sizes(
        {
            section: config[section].init_args
            for section in ("model", "task")
            if config.get(section) and config[section].get("init_args") is not None
        },
        data,
    )
    if config.get("task") is None:
        return
    task = instantiate_task(config.task)
    config.checkpoint.monitor = config.checkpoint.monitor or task.monitor
    sections = ["checkpoint"]
    if config.get("early_stopping") is not None and config.early_stopping.patience is not None:
        config.early_stopping.monitor = config.early_stopping.monitor or config.checkpoint.monitor
        sections.append("early_stopping")
    for section in sections:
        watcher = config[section]
        direction = task.direction(watcher.monitor, key=f"{section}.monitor")
        if watcher.mode is not None and watcher.mode != direction:
            raise ConfigError(
                f"{section}.mode={watcher.mode}, but {watcher.monitor} is better when "
                f"{'higher' if direction == 'max' else 'lower'}: unset {section}.mode (or set it to {direction})"
            )
        watcher.mode = direction


def instantiate_task(task_config: Any) -> Task:
    """The task of a parsed ``task`` section, built alone."""
    parser = LightningArgumentParser(exit_on_error=False)
    parser.add_subclass_arguments(Task, "task", fail_untyped=False)
    return parser.instantiate_classes(parser.parse_object({"task": task_config.as_dict()})).task


def check_early_stopping(trainer: Trainer, task: Task) -> None:
    """Every early-stopping callback's ``mode`` agrees with its metric's direction (Lightning's
    default, ``min``, would stop a run whose accuracy rises); one line naming both otherwise."""
    for callback in trainer.callbacks:
        if isinstance(callback, EarlyStopping) and getattr(callback, "enabled", True):
            direction = task.direction(callback.monitor, key="EarlyStopping monitor")
            if callback.mode != direction:
                raise ConfigError(
                    f"EarlyStopping(monitor={callback.monitor}, mode={callback.mode}): {callback.monitor} is better "
                    f"when {'higher' if direction == 'max' else 'lower'}: set its mode to {direction}"
                )


def use_backends(model: nn.Module, choice: Any, device: torch.device, training: bool = False) -> None:
    """``--attention_backend``: the blocks run on the chosen paths, which ``device`` must have (with
    their backward when ``training``)."""
    from ...attention import backends

    try:
        backends.use(model, choice.as_dict() if isinstance(choice, Namespace) else choice)
        backends.check(model, device, training)
    except ValueError as err:
        raise ConfigError(f"--attention_backend: {err}") from None


def instantiate_data(data_config: Any) -> Optional[LightningDataModule]:
    """The data module of a parsed ``data`` section (None without one), built alone."""
    if data_config is None:
        return None
    parser = LightningArgumentParser(exit_on_error=False)
    parser.add_lightning_class_args(LightningDataModule, "data", subclass_mode=True)
    return parser.instantiate_classes(parser.parse_object({"data": data_config.as_dict()})).data


def _as_list(value: Any) -> list:
    return [] if value is None else value if isinstance(value, list) else [value]


def _without_run_folders(config: Namespace) -> Namespace:
    """A copy of a subcommand's config with the run's own folders (and the fit run a test joins) unset."""
    config = config.clone()
    config.run_dir = config.trainer.default_root_dir = config.checkpoint.dirpath = None
    specs = config.trainer.logger if isinstance(config.trainer.logger, list) else [config.trainer.logger]
    for spec in specs:
        init_args = getattr(spec, "init_args", None)
        for key in loggers.RUN_ARGS:  # where this run logs, not what the next one should
            if init_args is not None and key in init_args:
                init_args[key] = None
    return config


def _as_dict(value: Namespace) -> dict:
    """A config section as plain JSON types (what a ``weights_only`` checkpoint load accepts)."""
    return json.loads(json.dumps(value.as_dict() if isinstance(value, Namespace) else dict(value), default=str))


def run_command(argv: list[str], build: Callable[[], T], resume: Optional[Callable[[], Optional[str]]] = None) -> T:
    """Run a command built on this CLI (``build()``, which parses ``argv``): its ``--config`` files
    checked first (file, line, column). An error the framework explains (a config value, a size, a
    file, a diverged run; see :mod:`framework.errors`) prints as one or two lines and exits with
    status 1, and a run folder this process made and never used is removed; other errors keep
    their traceback, and so does every error with ``--traceback`` or ``FRAMEWORK_TRACEBACK=1``.
    SIGTERM and SIGINT stop it as :mod:`framework.signals` says (``resume()``: how to resume the
    command, where it can be). The run folder's lock is released at the end."""

    def run() -> T:
        check_config_files(argv)
        try:
            return build()
        except SIGTERMException:  # Lightning's stop at a batch's end, a SystemExit of status 0: the contract's
            raise signals.Stopped() from None

    try:
        return signals.run(lambda: explained(argv, run, cleanup=runs.discard_unused), resume)
    finally:
        runs.release()


def resume_fit() -> Optional[str]:
    """How to resume the fit of this process's run folder: from its ``last.ckpt``, if it has one."""
    run = Path(os.environ.get(runs.RUN_DIR_ENV, "runs"))
    last = run / "checkpoints" / "last.ckpt"
    return f"resume it with `fit --config {run / 'config.yaml'} --ckpt_path {last}`" if last.is_file() else None


def main(argv: list[str], cli: type[FrameworkCLI] = FrameworkCLI) -> FrameworkCLI:
    """``python -m framework fit|validate|test|predict <argv>`` (``argv`` starts with the subcommand),
    through :func:`run_command`; a fit stopped by a signal says how to resume it."""
    argv = [str(arg) for arg in argv]
    return run_command(argv, lambda: cli(args=argv), resume_fit if argv[:1] == ["fit"] else None)
