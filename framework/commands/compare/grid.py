"""The grid of a comparison: ``--grid KEY=[v1,v2,...]`` flags, their product, and its cells.

A value list is YAML (flow style): ``model.attention=[criss_cross,danet,none]``,
``optimizer.init_args.lr=[0.01,0.001]``, ``model.attention=['{"class_path": "my.Block"}', none]``
(quote a value that holds a comma or a bracket). A single value without brackets is a list of
one. Several ``--grid`` flags make the product, the first key varying slowest. The key
``config`` is special: each value is a config file, put before the comparison's other
``--config`` files (which compose on top of it, as presets do).

Cells that are no product are listed by ``--cells`` (:func:`parse_cells`), each a name and its
own flags: ``'baseline: --config domains/demo/demo.yaml --model.attention=none --model.dim=32'``,
or a YAML file mapping names to flags. They make one more axis (the key ``cells``, varying
slowest, crossed with any ``--grid``): a listed cell's ``--config`` files come first, then the
comparison's flags, then its other flags.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from ...errors import ConfigError

CONFIG_KEY = "config"
CELLS_KEY = "cells"
#: Flags compare sets for every run: a listed cell cannot set them.
RESERVED_FLAGS = ("--run_dir", "--seed_everything", "--ckpt_path", "--print_config", "--experiment")
KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")
SAFE = re.compile(r"[^A-Za-z0-9._=,+-]")
MAX_FOLDER = 80


@dataclass(frozen=True)
class Axis:
    """One ``--grid`` flag: a config key and its values; or the ``--cells`` list: their names,
    and each one's flags in ``flags``."""

    key: str
    values: tuple
    flags: tuple = ()  # --cells only: the flags of each value, in order

    def as_dict(self) -> dict:
        listed = {"flags": [list(f) for f in self.flags]} if self.flags else {}
        return {"key": self.key, "values": list(self.values), **listed}


@dataclass
class Cell:
    """One point of the grid: a value per key; its runs differ only in the seed."""

    values: dict[str, Any]
    name: str = ""  # folder name, unique in the grid: "attention=criss_cross"
    label: str = ""  # shown in tables: "criss_cross" (one key) or "attention=danet, lr=0.01"
    args: list[str] = field(default_factory=list)  # command-line flags of the cell's values
    config_args: list[str] = field(default_factory=list)  # --config of a `config` grid key, put first

    def matches(self, text: str) -> bool:
        """Whether ``text`` names this cell: its label, folder name, or one of its values."""
        return text in (self.name, self.label) or text in (value_text(v) for v in self.values.values())


def value_text(value: Any) -> str:
    """A grid value as the command line writes it (YAML/JSON for anything but a string)."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def parse_axis(flag: str) -> Axis:
    """``KEY=VALUES`` -> Axis; a ConfigError naming the flag when it is malformed."""
    key, sep, text = flag.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(
            f"--grid {flag}: expected KEY=[value,value,...], for example --grid model.attention=[cbam,none]"
        )
    if key.startswith("--"):
        key = key[2:]
    if not KEY_PATTERN.match(key):
        raise ConfigError(f"--grid {flag}: '{key}' is not a config key (dotted names such as model.attention)")
    if key in ("seed_everything", "run_dir", "ckpt_path"):
        raise ConfigError(f"--grid {key}: set by compare itself for every run (use --seeds for seeds)")
    if key == CELLS_KEY:
        raise ConfigError(
            f"--grid {CELLS_KEY}: list cells with --cells 'NAME: FLAGS' (the key {CELLS_KEY} is compare's)"
        )
    text = text.strip()
    if not text:
        raise ConfigError(f"--grid {key}: no values given; expected {key}=[value,value,...]")
    try:
        values = yaml.safe_load(text) if text.startswith("[") else [_scalar(text)]
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(
            f"--grid {key}: the values {text} are not a YAML list ({problem}); quote values that "
            "hold commas or brackets: [ 'a,b', c ]"
        ) from None
    if not isinstance(values, list):
        values = [values]
    if not values:
        raise ConfigError(f"--grid {key}: the list of values is empty")
    texts = [value_text(v) for v in values]
    if len(set(texts)) != len(texts):
        repeated = sorted({t for t in texts if texts.count(t) > 1})
        raise ConfigError(f"--grid {key}: {', '.join(repeated)} listed more than once")
    if key == CONFIG_KEY:
        for value in values:
            if not isinstance(value, str) or not Path(value).is_file():
                raise ConfigError(f"--grid config: {value}: no such config file")
    return Axis(key, tuple(values))


def _scalar(text: str) -> Any:
    """A value given without brackets: YAML's reading of it (numbers, booleans), else the text."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (str, int, float, bool, dict, type(None))) else text


def parse_cells(items: list[str]) -> Optional[Axis]:
    """``--cells`` items (``'NAME: FLAGS'``, or a YAML file of ``NAME: FLAGS`` entries, FLAGS a
    string or a list) -> the axis of the listed cells; None without items."""
    listed: dict[str, list[str]] = {}
    for item in items or []:
        if ":" in item:
            name, _, flags = item.partition(":")
            entries = {name: flags}
        elif Path(item).suffix in (".yaml", ".yml"):
            entries = _cells_file(Path(item))
        else:
            raise ConfigError(
                f"--cells {item!r}: expected 'NAME: FLAGS', for example "
                "'baseline: --config domains/demo/demo.yaml --model.attention=none', or a YAML file"
            )
        for name, flags in entries.items():
            name = str(name).strip()
            if not name:
                raise ConfigError(f"--cells {item!r}: a cell needs a name before the ':'")
            if name in listed:
                raise ConfigError(f"--cells {name}: listed more than once")
            listed[name] = _cell_flags(name, flags)
    if not listed:
        return None
    return Axis(CELLS_KEY, tuple(listed), tuple(tuple(f) for f in listed.values()))


def _cells_file(path: Path) -> dict:
    try:
        entries = yaml.safe_load(path.read_text())
    except OSError as err:
        raise ConfigError(f"--cells {path}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"--cells {path}: not YAML ({getattr(err, 'problem', None) or err})") from None
    if not isinstance(entries, dict) or not entries:
        raise ConfigError(
            f"--cells {path}: expected a mapping of cell names to their flags, for example\n"
            "  baseline: --config domains/demo/demo.yaml --model.attention=none"
        )
    return entries


def _cell_flags(name: str, flags: Any) -> list[str]:
    if flags is None:
        return []
    if isinstance(flags, str):
        try:
            flags = shlex.split(flags)
        except ValueError as err:
            raise ConfigError(f"--cells {name}: {err} in its flags") from None
    if not isinstance(flags, list) or not all(isinstance(f, (str, int, float)) for f in flags):
        raise ConfigError(f"--cells {name}: its flags must be a string or a list of strings")
    flags = [str(f) for f in flags]
    for flag in flags:
        if flag.split("=", 1)[0] in RESERVED_FLAGS:
            raise ConfigError(f"--cells {name}: {flag.split('=', 1)[0]} is set by compare for every run")
    return flags


def split_config_flags(flags: list[str]) -> tuple[list[str], list[str]]:
    """A listed cell's flags: its ``--config`` files (with their ``--config``), and the others."""
    configs, others, i = [], [], 0
    while i < len(flags):
        if flags[i] in ("--config", "-c") and i + 1 < len(flags):
            configs += ["--config", flags[i + 1]]
            i += 2
            continue
        if flags[i].startswith("--config="):
            configs += ["--config", flags[i].split("=", 1)[1]]
        else:
            others.append(flags[i])
        i += 1
    return configs, others


def parse_grid(flags: list[str]) -> list[Axis]:
    axes = [parse_axis(flag) for flag in flags or []]
    keys = [axis.key for axis in axes]
    for key in keys:
        if keys.count(key) > 1:
            raise ConfigError(f"--grid {key}: given more than once; put all its values in one list")
    return axes


def short_key(key: str, keys: list[str]) -> str:
    """The last part of a dotted key, or the whole key where two keys share their last part."""
    last = key.rsplit(".", 1)[-1]
    return last if sum(k.rsplit(".", 1)[-1] == last for k in keys) == 1 else key


def _shown(key: str, value: Any) -> str:
    text = value_text(value)
    return Path(text).stem if key == CONFIG_KEY else text


def _part(key: str, keys: list[str], value: Any) -> str:
    """A cell's name part for one key: ``attention=mhsa``; a listed cell's name alone."""
    return _shown(key, value) if key == CELLS_KEY else f"{short_key(key, keys)}={_shown(key, value)}"


def _folder(text: str) -> str:
    safe = SAFE.sub("_", text)
    if safe != text or len(safe) > MAX_FOLDER:
        digest = hashlib.sha1(text.encode()).hexdigest()[:8]
        safe = f"{safe[: MAX_FOLDER - 9]}-{digest}"
    return safe


def cells(axes: list[Axis]) -> list[Cell]:
    """The product of the axes, in order (the first key varies slowest); one cell without axes."""
    keys = [axis.key for axis in axes]
    listed = {
        axis.values[i]: list(axis.flags[i]) for axis in axes if axis.key == CELLS_KEY for i in range(len(axis.values))
    }
    result = []
    for combination in itertools.product(*(axis.values for axis in axes)):
        values = dict(zip(keys, combination))
        parts = [_part(k, keys, v) for k, v in values.items()]
        cell = Cell(values=values)
        cell.name = _folder(",".join(parts)) if parts else "default"
        cell.label = _shown(keys[0], combination[0]) if len(keys) == 1 else (", ".join(parts) or "default")
        for key, value in values.items():
            if key == CONFIG_KEY:
                cell.config_args += ["--config", value]
            elif key == CELLS_KEY:
                configs, others = split_config_flags(listed[value])
                cell.config_args += configs
                cell.args += others
            else:
                cell.args.append(f"--{key}={value_text(value)}")
        result.append(cell)
    names = [c.name for c in result]
    if len(set(names)) != len(names):  # values that differ only in unsafe characters
        for cell in result:
            cell.name = _folder(cell.name + "#" + json.dumps(cell.values, sort_keys=True, default=str))
    return result
