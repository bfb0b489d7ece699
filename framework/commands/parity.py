"""``python -m framework parity``: every attention block with several paths, each path against eager
on one batch of the config's data (:mod:`framework.attention.backend_parity`), printed as a table.

    python -m framework parity --config domains/demo/demo.yaml
    python -m framework parity --config domains/vision/ccnet.yaml --backends='[eager, triton, compiled]' --device cuda

It builds the model (untrained, or from ``--ckpt_path``: the checkpoint's model and task, read as
``test`` reads them, with its weights), the task and the data, no trainer, no run folder and no logger.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, Optional

import torch
from lightning.pytorch.cli import LightningArgumentParser
from torch import nn

from ..attention.backends import Backend
from ..checkpoint import config_from_checkpoint, read_checkpoint
from ..errors import CheckpointError, ConfigError
from ..task_module import weights_misfit
from ..tasks import Task
from ..values import PositiveInt
from .fit import FrameworkCLI, check_machine, instantiate_data, resolve_run_values, run_command


class ParityCLI(FrameworkCLI):
    """The CLI's parser, building the model, task and data only, plus the report's options."""

    command = "parity"
    examples = (
        "--config domains/demo/demo.yaml",
        "--config domains/vision/ccnet.yaml --backends='[eager, triton, compiled]' --device cuda",
        "--config runs/<experiment>/<run>/config.yaml --ckpt_path runs/<experiment>/<run>/checkpoints/best.ckpt",
    )
    description = (
        "Each attention block's paths (eager, sdpa, flex, triton, compiled ...) on one batch: max |d output| "
        "and |d gradient| against eager in float64 on the CPU, time, TFLOP/s and peak memory."
    )

    def __init__(self, args: list[str]) -> None:
        super().__init__(args=args, run=False)

    def add_arguments_to_parser(self, parser: Any) -> None:
        super().add_arguments_to_parser(parser)
        parser.add_argument(
            "--backends",
            type=Optional[list[Backend]],
            default=None,
            help="The paths compared with eager (default: every path of every block).",
        )
        parser.add_argument(
            "--device",
            type=Optional[Literal["cpu", "cuda"]],
            default=None,
            help="Where the paths are timed (default: cuda when there is one, else cpu).",
        )
        parser.add_argument(
            "--repeats", type=PositiveInt, default=5, help="Timed passes per path (the median is shown)."
        )
        parser.add_argument(
            "--ckpt_path",
            type=Optional[str],
            default=None,
            help="A checkpoint of a fit: its model, task and weights (default: the untrained model of the config).",
        )

    def _parse_ckpt_path(self) -> None:
        """The model and task configs come from the checkpoint, as for ``test`` (see FrameworkCLI)."""
        if ckpt_path := self.config.get("ckpt_path"):
            self.config = config_from_checkpoint(self.parser, self.config, Path(ckpt_path), self.argv, "parity")

    def before_instantiate_classes(self) -> None:
        check_machine(self.config)

    def instantiate_classes(self) -> None:
        config = self.config
        self.datamodule = instantiate_data(config.data)
        resolve_run_values(config, self.datamodule)
        parser = LightningArgumentParser(exit_on_error=False)  # the model and the task alone: no trainer, no logger
        parser.add_subclass_arguments(nn.Module, "model", fail_untyped=False)
        parser.add_subclass_arguments(Task, "task", fail_untyped=False)
        built = parser.instantiate_classes(
            parser.parse_object({"model": config.model.as_dict(), "task": config.task.as_dict()})
        )
        self.network, self.task = built.model, built.task
        if config.ckpt_path:
            state = read_checkpoint(Path(config.ckpt_path), "--ckpt_path")["state_dict"]
            weights = {k.removeprefix("model."): v for k, v in state.items() if k.startswith("model.")}
            if problem := weights_misfit(self.network.state_dict(), weights):
                raise CheckpointError(
                    f"--ckpt_path {config.ckpt_path} does not fit the model its config builds: {problem}"
                )
            self.network.load_state_dict(weights)


def report(cli: ParityCLI) -> list:
    """Run the comparison on the first validation batch and print the table."""
    from ..attention.backend_parity import format_table, parity

    config = cli.config
    device = torch.device(config.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: this machine has no CUDA device (use --device cpu)")
    data = cli.datamodule
    data.setup("validate")
    batch = next(iter(data.val_dataloader()))
    network = cli.network.eval()
    rows = parity(
        network, lambda: cli.task.run_model(network, cli.task.split(batch)[0]), config.backends, device, config.repeats
    )
    if not rows:
        raise ConfigError(
            "parity: the model has no attention block with several paths (see `python -m framework "
            "blocks`; each block's paths are its `backends`)"
        )
    print(format_table(rows, str(device)))
    return rows


def main(argv: Optional[list[str]] = None) -> Optional[list]:
    """``python -m framework parity ...`` (see :func:`framework.commands.fit.run_command`)."""
    argv = sys.argv[2:] if argv is None else [str(a) for a in argv]
    return run_command(argv, lambda: report(ParityCLI(argv)))
