"""The ``--config`` files of a command line, checked before the parser reads them: each exists
and is a YAML mapping that gives no key twice and has no empty ``init_args``, and so are the
config files it names (``data: datasets/scenes.yaml``); an error names the file and line."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Optional

import yaml

from ...errors import ConfigError


class UniqueKeys(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that gives a key twice (YAML keeps the last one,
    silently): a ``yaml.MarkedYAMLError`` naming the key and both lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice (first at line {seen[key]})", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


#: The packages whose config files ship with the framework: an installed copy finds
#: ``--config configs/trainer/gpu.yaml`` or ``domains/vision/ccnet.yaml`` from any folder.
SHIPPED = ("configs", "domains")


def located(value: str) -> Path:
    """The config file ``value`` names: the path itself where it exists, else a shipped config of
    that relative path (``configs/...``, ``domains/...``) in the installed packages."""
    path = Path(value)
    if path.is_file() or path.is_absolute() or len(path.parts) < 2 or path.parts[0] not in SHIPPED:
        return path
    spec = importlib.util.find_spec(path.parts[0])
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (found := Path(folder).joinpath(*path.parts[1:])).is_file():
            return found
    return path


def check_config_files(argv: list[str]) -> None:
    """Every ``--config`` file exists and is a YAML mapping; an error names the file, line and column.
    A shipped config named by its relative path is found in the installed packages (:func:`located`):
    ``argv`` is changed in place to name it."""
    for i, arg in enumerate(argv):
        name, joined, value = arg.partition("=")
        if name not in ("--config", "-c") or (not joined and i + 1 >= len(argv)):
            continue
        path = located(value if joined else argv[i + 1])
        if not path.is_file():
            raise ConfigError(f"--config {path}: no such file")
        if joined:
            argv[i] = f"{name}={path}"
        else:
            argv[i + 1] = str(path)
        check_config_file(path)


def check_config_file(path: Path, seen: Optional[set[Path]] = None) -> None:
    """One config file, and the config files its values name (relative to its folder)."""
    seen = set() if seen is None else seen
    if path.resolve() in seen:
        return
    seen.add(path.resolve())
    try:
        content = yaml.load(path.read_text(), Loader=UniqueKeys)
    except yaml.constructor.ConstructorError as err:
        if "given twice" not in str(err.problem):
            raise ConfigError(f"--config {path} is not valid YAML: {err.problem}") from None
        raise ConfigError(f"--config {path}:{err.problem_mark.line + 1}: {err.problem}") from None
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
    for named in _named_files(content, path.parent):
        check_config_file(named, seen)


def _named_files(content: Any, folder: Path) -> list[Path]:
    """The YAML files that string values of a config name, relative to its folder, where they exist."""
    values = content.values() if isinstance(content, dict) else content if isinstance(content, list) else [content]
    found = []
    for value in values:
        if isinstance(value, str) and value.endswith((".yaml", ".yml")) and (folder / value).is_file():
            found.append(folder / value)
        elif isinstance(value, (dict, list)):
            found += _named_files(value, folder)
    return found


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
