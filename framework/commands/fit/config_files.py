"""The ``--config`` files of a command line, checked before the parser reads them: each exists
and is a YAML mapping without empty ``init_args``, and an error names the file (and line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml

from ...errors import ConfigError


def check_config_files(argv: list[str]) -> None:
    """Every ``--config`` file exists and is a YAML mapping; an error names the file, line and column."""
    for i, arg in enumerate(argv):
        name, _, value = arg.partition("=")
        if name not in ("--config", "-c"):
            continue
        path = Path(value or (argv[i + 1] if i + 1 < len(argv) else ""))
        if not path.is_file():
            raise ConfigError(f"--config {path}: no such file")
        try:
            content = yaml.safe_load(path.read_text())
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise ConfigError(f"--config {path} is not valid YAML{where}: {getattr(err, 'problem', err)}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"--config {path} is not a text file") from None
        if not isinstance(content, dict):
            raise ConfigError(f"--config {path} must hold a mapping of config keys, got {type(content).__name__}")
        empty = _empty_init_args(content)
        if empty:
            raise ConfigError(
                f"--config {path}: {empty} is empty; give it arguments or remove the line (the class's defaults apply)"
            )


def _empty_init_args(content: Any, prefix: str = "") -> Optional[str]:
    """The dotted name of the first ``init_args:`` without a value in a YAML tree, or None."""
    items = content.items() if isinstance(content, dict) else enumerate(content) if isinstance(content, list) else ()
    for key, value in items:
        name = f"{prefix}.{key}" if prefix else str(key)
        if key == "init_args" and value is None and isinstance(content, dict) and "class_path" in content:
            return name
        found = _empty_init_args(value, name)
        if found:
            return found
    return None
