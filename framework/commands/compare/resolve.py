"""Check every cell's command line before any run starts: the config parser resolves it
(``fit ... --print_config``, in this process, nothing is built), so a grid key the config does
not have, or a value it rejects, is one error naming the ``--grid`` flag."""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any, Optional

import yaml

from ... import signals
from ...errors import ConfigError
from .grid import CELLS_KEY, CONFIG_KEY, Cell


def resolve(args: list[str], filled: bool = False) -> tuple[Optional[str], str]:
    """The resolved config of ``fit <args>`` as YAML, or None and the parser's message; with
    ``filled``, the sizes and the checkpoint metric that the data and the task fill in (building
    those two), else the config as its files and flags say, nothing built."""
    from ...errors import TRACEBACK_ENV
    from ..fit import FrameworkCLI, main

    class AsWritten(FrameworkCLI):
        fill_printed_config = filled

    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    traceback = os.environ.pop(TRACEBACK_ENV, None)  # the parser's one-line messages, whatever the caller wants
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(["fit", *args, "--print_config"], cli=AsWritten)
    except signals.Stopped:  # the comparison was stopped (Ctrl-C, SIGTERM), not this cell refused
        raise
    except SystemExit as stop:
        code = stop.code
    finally:
        if traceback is not None:
            os.environ[TRACEBACK_ENV] = traceback
    if code in (0, None):
        return out.getvalue(), ""
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    message = next((line for line in lines if line.startswith("error:")), lines[0] if lines else f"exit status {code}")
    return None, message.removeprefix("error:").strip()


def has_key(config: dict, key: str) -> bool:
    """Whether the dotted ``key`` names a value of the resolved config (``init_args`` levels implied)."""
    node: Any = config
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, dict) and isinstance(node.get("init_args"), dict) and part in node["init_args"]:
            node = node["init_args"][part]
        else:
            return False
    return True


def resolve_cells(cells: list[Cell], run_args: list[str], keys: list[str]) -> dict[str, str]:
    """Resolve every cell; the resolved YAML by cell name. Errors name the ``--grid`` flag."""
    resolved: dict[str, str] = {}
    for cell in cells:
        text, message = resolve([*cell.config_args, *run_args, *cell.args])
        if text is None:
            named = [k for k in keys if k not in (CONFIG_KEY, CELLS_KEY) and k in message]
            if named:
                flag = next(a for a in cell.args if a.startswith(f"--{named[0]}="))
                raise ConfigError(f"--grid {named[0]}: {flag} is refused by the config: {message}")
            if CELLS_KEY in cell.values:
                raise ConfigError(f"--cells {cell.values[CELLS_KEY]}: the cell {cell.label} cannot start: {message}")
            raise ConfigError(f"the runs of the cell {cell.label} cannot start: {message}")
        resolved[cell.name] = text
    return resolved


def wandb_project(resolved_yaml: str) -> Optional[str]:
    """The W&B project when the resolved config logs to W&B (a WandbLogger), else None."""
    config = yaml.safe_load(resolved_yaml) or {}
    loggers = (config.get("trainer") or {}).get("logger")
    for logger in loggers if isinstance(loggers, list) else [loggers]:
        if isinstance(logger, dict) and str(logger.get("class_path", "")).endswith("WandbLogger"):
            return (logger.get("init_args") or {}).get("project") or "attention-framework"
    return None
