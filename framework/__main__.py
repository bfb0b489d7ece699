"""``python -m framework``: the one way in. It names every command and hands the rest of the
command line to the module of ``framework.commands`` that runs it, importing that module only
then (``--help`` imports neither Lightning nor W&B). Every command, its imports included, runs under
the one contract for SIGTERM and SIGINT (:mod:`framework.signals`). Nothing in the framework
imports this module; it imports them."""

from __future__ import annotations

import os
import signal
import sys
from importlib import import_module
from typing import Any, Optional

from . import signals

PROG = "python -m framework"

#: command -> (module whose ``main(argv)`` runs it, its purpose in one line).
COMMANDS: dict[str, tuple[str, str]] = {
    "fit": ("framework.commands.fit", "train a model (a config names the model, task and data)"),
    "validate": ("framework.commands.fit", "validate a checkpoint on the validation split"),
    "test": ("framework.commands.fit", "test a checkpoint on the test split"),
    "predict": ("framework.commands.fit", "write a checkpoint's predictions into its run folder"),
    "evaluate": ("framework.commands.evaluate", "is the attention right? ablation, faithfulness, gold attention"),
    "compare": (
        "framework.commands.compare",
        "a grid, listed cells or an Optuna search of configs over seeds: tables, statistics",
    ),
    "parity": (
        "framework.commands.parity",
        "each block's paths (eager, sdpa, flex, triton, compiled) against eager, timed",
    ),
    "blocks": ("framework.commands.blocks", "the attention catalogue: every block, its kind and paper"),
}
#: Commands that are LightningCLI's subcommands: their module reads the command word too.
LIGHTNING = ("fit", "validate", "test", "predict")


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"usage: {PROG} <command> [options]   ({PROG} <command> --help: its options)", "", "commands:"]
    lines += [f"  {name:<{width}}  {purpose}" for name, (_, purpose) in COMMANDS.items()]
    lines += [
        "",
        "examples:",
        f"  {PROG} fit --config domains/vision/ccnet.yaml",
        f"  {PROG} test --config runs/<experiment>/<run>/config.yaml"
        " --ckpt_path runs/<experiment>/<run>/checkpoints/best.ckpt",
        f"  {PROG} compare --config domains/demo/demo.yaml --grid model.attention=[mhsa,none] --seeds 3",
    ]
    return "\n".join(lines)


def main(args: Optional[list[str]] = None) -> Any:
    """Run the command that ``args`` (default: the command line) starts with, under the signal
    contract; what it returns (the fitted CLI for ``fit`` ..., tests use it)."""
    argv = sys.argv[1:] if args is None else [str(arg) for arg in args]
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        raise SystemExit(0 if argv else 2)
    command = argv[0]
    if command not in COMMANDS:
        close = [name for name in COMMANDS if name.startswith(command[:2])] if not command.startswith("-") else []
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        print(f"error: unknown command {command!r}{hint}\n({PROG} --help lists the commands)", file=sys.stderr)
        raise SystemExit(2)
    return signals.run(lambda: import_module(COMMANDS[command][0]).main(argv if command in LIGHTNING else argv[1:]))


def console() -> None:
    """The ``attention-framework`` (and ``afw``) console script: :func:`main` on the command line,
    its exit status the command's (a console script exits with what its function returns). A
    reader that closes the output early (``| head``) ends it quietly."""
    try:
        main()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more reaches the closed pipe
        raise SystemExit(128 + signal.SIGPIPE) from None


if __name__ == "__main__":
    console()
