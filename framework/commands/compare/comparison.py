"""A comparison's spec (what its runs are) and its folder.

``runs/compare/<name>/spec.json`` records the run arguments, the grid, the test arguments
and each cell's resolved config (its hash). A second invocation with the same spec resumes
the comparison; one with another spec is refused, naming the difference. Seeds are not part
of the spec: adding seeds to a finished comparison runs only the new ones. Nor is the list of
cells closed: a ``--grid`` value or a ``--cells`` entry the comparison does not have yet joins it
(:func:`extend`), so that the same command with one more value runs only the new cells and tables
all of them; a cell whose flags changed under a name the comparison has is refused, naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ...errors import ConfigError
from ...runs import RUNS_ROOT_ENV, write_json_atomically, write_text_atomically
from .grid import CELLS_KEY, Axis, Cell, cells, split_config_flags, value_text

SPEC_FILE = "spec.json"
#: The folder of each cell's resolved config (``<cell>.yaml``), to name what changed under a cell's name.
RESOLVED_FOLDER = "resolved"
FORMAT = 1


@dataclass
class Spec:
    name: str
    folder: Path
    run_args: list[str]  # --config files and overrides given to every fit, in order
    axes: list[Axis]
    seeds: list[int]
    test_args: list[str] = field(default_factory=list)
    test_ckpt: str = "best"
    resolved: dict[str, str] = field(default_factory=dict)  # cell name -> hash of its resolved config
    resolved_texts: dict[str, str] = field(default_factory=dict)  # cell name -> its resolved config (YAML)
    monitor: Optional[str] = None  # the task's checkpoint metric (val/acc ...), from the resolved config
    mode: Optional[str] = None
    wandb_project: Optional[str] = None  # set when the runs log to W&B
    cells: list[Cell] = field(default_factory=list)
    baseline: Optional[Cell] = None  # the cell of the significance test (not part of the spec)
    max_epochs: dict[str, Optional[int]] = field(default_factory=dict)  # by cell, for the progress (not part of it)
    stopping: dict[str, Any] = field(default_factory=dict)  # by cell, its early stopping (.grid_status.Stopping)
    search: dict[str, str] = field(default_factory=dict)  # --search: key -> its space; the cells are its trials
    added: list[Cell] = field(default_factory=list)  # cells new to a comparison that had others (not part of it)

    def __post_init__(self) -> None:
        if not self.cells:
            self.cells = cells(self.axes)

    @property
    def keys(self) -> list[str]:
        return [axis.key for axis in self.axes]

    def run_dir(self, cell: Cell, seed: int) -> Path:
        return self.folder / "runs" / cell.name / f"seed{seed}"

    def cell(self, text: str, flag: str = "--baseline") -> Cell:
        """The cell named by ``text`` (label, folder name or value); a ConfigError naming ``flag``
        and listing them otherwise."""
        for cell in self.cells:
            if cell.matches(text):
                return cell
        raise ConfigError(f"{flag} {text}: no such cell; the cells are {', '.join(c.label for c in self.cells)}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "name": self.name,
            "run_args": self.run_args,
            "grid": [axis.as_dict() for axis in self.axes],
            "test_args": self.test_args,
            "test_ckpt": self.test_ckpt,
            "resolved_configs": self.resolved,
            "seeds": self.seeds,
            "monitor": self.monitor,
            "mode": self.mode,
            "wandb_project": self.wandb_project,
            "cells": []
            if self.search
            else [{"name": c.name, "label": c.label, "values": c.values} for c in self.cells],
            **({"search": self.search} if self.search else {}),
        }

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        previous = load(self.folder)
        seeds = sorted(set(self.seeds) | set(previous.get("seeds", []))) if previous else self.seeds
        write_json_atomically(self.folder / SPEC_FILE, {**self.as_dict(), "seeds": seeds})
        for cell, text in self.resolved_texts.items():  # what a later change of a cell's config is told against
            write_text_atomically(self.folder / RESOLVED_FOLDER / f"{cell}.yaml", text)


def comparison_folder(name: str) -> Path:
    return Path(os.environ.get(RUNS_ROOT_ENV, "runs")) / "compare" / name


def default_name(run_args: list[str], axes: list[Axis]) -> str:
    """``<first config's name>-<grid keys>``: ``ccnet-attention``, ``demo-attention-lr``."""
    configs = [Path(v).stem for axis in axes if axis.key == "config" for v in axis.values[:1]]
    configs += [
        Path(v).stem for axis in axes if axis.key == CELLS_KEY for v in split_config_flags(list(axis.flags[0]))[0][1::2]
    ]
    configs += [Path(run_args[i + 1]).stem for i, a in enumerate(run_args[:-1]) if a in ("--config", "-c")]
    configs += [Path(a.split("=", 1)[1]).stem for a in run_args if a.startswith("--config=")]
    parts = [configs[0] if configs else "compare"] + [
        axis.key.rsplit(".", 1)[-1] for axis in axes if axis.key != "config"
    ]
    if any(axis.key == "config" for axis in axes):
        parts.append("configs")
    return "-".join(parts)


def load(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / SPEC_FILE).read_text())
    except (OSError, ValueError):
        return {}


def config_hash(resolved_yaml: str) -> str:
    return hashlib.sha256(resolved_yaml.encode()).hexdigest()[:16]


def extend(spec: Spec) -> list[Cell]:
    """The cells of the comparison in ``spec.folder`` joined by those of ``spec``: every grid
    value and listed cell it had, then the new ones, in the order given (the spec's axes and cells
    become that union). The cells that are new; none where the folder holds no comparison with
    the same grid keys (:func:`check_resumable` names that difference). A listed cell whose flags
    differ from those recorded under its name is a ConfigError naming it."""
    saved = load(spec.folder)
    old = [
        Axis(g["key"], tuple(g["values"]), tuple(tuple(f) for f in g.get("flags") or ())) for g in saved.get("grid", [])
    ]
    if not saved or spec.search or saved.get("search") or [axis.key for axis in old] != spec.keys:
        return []
    had = {cell.name for cell in cells(old)}
    spec.axes = [_joined(before, given, spec.folder) for before, given in zip(old, spec.axes)]
    spec.cells = cells(spec.axes)
    return [cell for cell in spec.cells if cell.name not in had]


def _joined(before: Axis, given: Axis, folder: Path) -> Axis:
    """One axis of a comparison (``before``) with the values of ``given`` it lacks appended."""
    values, flags = list(before.values), list(before.flags)
    known = [value_text(v) for v in values]
    for index, value in enumerate(given.values):
        text = value_text(value)
        if text not in known:
            values.append(value)
            known.append(text)
            flags += [given.flags[index]] if given.key == CELLS_KEY else []
        elif given.key == CELLS_KEY and list(given.flags[index]) != list(flags[known.index(text)]):
            raise ConfigError(
                f"--cells {text}: {folder} has a cell {text} with the flags {' '.join(flags[known.index(text)])!r}, "
                f"here {' '.join(given.flags[index])!r}; a cell's flags cannot change under its name: give the "
                "new flags a new name (or choose another --name)"
            )
    return Axis(given.key, tuple(values), tuple(flags))


def check_resumable(spec: Spec) -> None:
    """Refuse to continue a comparison folder made with another spec, naming the difference."""
    saved = load(spec.folder)
    if not saved:
        if (spec.folder / "runs").is_dir():
            raise ConfigError(
                f"{spec.folder} holds runs but no readable {SPEC_FILE}: it was not made by this "
                "command; choose another --name"
            )
        return
    here = spec.as_dict()
    where = f"{spec.folder} was made with"
    hint = "; resume it with the same arguments, or choose another --name (or remove the folder)"
    if saved.get("search", {}) != here.get("search", {}):
        spaces = [
            " ".join(f"--search {k}={v}" for k, v in spec.get("search", {}).items()) or "no --search"
            for spec in (saved, here)
        ]
        raise ConfigError(f"{where} {spaces[0]}, here {spaces[1]}{hint}")
    if saved.get("run_args") != here["run_args"]:
        raise ConfigError(
            f"{where} the run arguments {' '.join(saved.get('run_args', []))!r}, not "
            f"{' '.join(here['run_args'])!r}{hint}"
        )
    old = {g["key"]: g["values"] for g in saved.get("grid", [])}
    new = {g["key"]: g["values"] for g in here["grid"]}
    for key in sorted(set(old) ^ set(new)):  # another key names every cell otherwise
        if key not in new:
            raise ConfigError(f"{where} --grid {key}={_list(old[key])}, which is not given here{hint}")
        raise ConfigError(f"{where} no --grid {key}; here it is {_list(new[key])}{hint}")
    for key in old:
        if [value_text(v) for v in old[key]] != [value_text(v) for v in new[key][: len(old[key])]]:
            flag = "--cells" if key == CELLS_KEY else f"--grid {key}="
            raise ConfigError(f"{where} {flag}{_list(old[key])}, here {_list(new[key])}{hint}")
    listed = [
        ({g["key"]: g.get("flags") for g in grid}).get(CELLS_KEY) or []
        for grid in (saved.get("grid", []), here["grid"])
    ]
    if listed[0] != listed[1][: len(listed[0])]:
        changed = [name for name, a, b in zip(new.get(CELLS_KEY, []), *listed) if a != b]
        raise ConfigError(f"{where} other flags for the cell(s) {', '.join(changed)} of --cells{hint}")
    if list(old) != list(new):
        raise ConfigError(f"{where} the --grid keys in the order {', '.join(old)}, here {', '.join(new)}{hint}")
    for key in ("test_args", "test_ckpt"):
        if saved.get(key) != here[key]:
            flag = "--test_override" if key == "test_args" else "--test_ckpt"
            raise ConfigError(f"{where} {flag} {saved.get(key)}, here {here[key]}{hint}")
    for cell, digest in here["resolved_configs"].items():
        before = saved.get("resolved_configs", {}).get(cell)
        if before and before != digest:
            raise ConfigError(
                f"{where} another resolved config for the cell {cell} ({_changes(spec, cell)}); "
                f"a cell's config cannot change under its name{hint}"
            )


def _changes(spec: Spec, cell: str, shown: int = 4) -> str:
    """What differs between the cell's saved resolved config and this one: its keys, with both
    values (``model.init_args.attention_stages: absent there, null here``); a general cause when
    the comparison is older than the saved configs."""
    import yaml

    saved, here = spec.folder / RESOLVED_FOLDER / f"{cell}.yaml", spec.resolved_texts.get(cell)
    if not saved.is_file() or here is None:
        return "a config file it reads, or a default of the code, has changed since"
    before, after = _flat(yaml.safe_load(saved.read_text()) or {}), _flat(yaml.safe_load(here) or {})
    keys = sorted(key for key in before.keys() | after.keys() if before.get(key, _ABSENT) != after.get(key, _ABSENT))
    said = [f"{key}: {_shown(before.get(key, _ABSENT))} there, {_shown(after.get(key, _ABSENT))} here" for key in keys]
    return "; ".join(said[:shown]) + (f"; and {len(said) - shown} more" if len(said) > shown else "")


_ABSENT = object()


def _flat(config: Any, prefix: str = "") -> dict[str, Any]:
    """A config's leaves by dotted key: ``{"model.init_args.widths": [8, 16], ...}``."""
    if not isinstance(config, dict) or not config:
        return {prefix: config}
    return {
        k: v for key, value in config.items() for k, v in _flat(value, f"{prefix}.{key}" if prefix else key).items()
    }


def _shown(value: Any) -> str:
    return "absent" if value is _ABSENT else json.dumps(value, default=str)  # YAML dates too


def _list(values: list) -> str:
    return "[" + ",".join(value_text(v) for v in values) + "]"
