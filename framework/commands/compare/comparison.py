"""A comparison's spec (what its runs are) and its folder.

``runs/compare/<name>/spec.json`` records the run arguments, the grid, the test arguments
and each cell's resolved config (its hash). A second invocation with the same spec resumes
the comparison; one with another spec is refused, naming the difference. Seeds are not part
of the spec: adding seeds to a finished comparison runs only the new ones.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ...errors import ConfigError
from ...runs import RUNS_ROOT_ENV, write_json_atomically
from .grid import CELLS_KEY, Axis, Cell, cells, split_config_flags, value_text

SPEC_FILE = "spec.json"
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
    monitor: Optional[str] = None  # the task's checkpoint metric (val/acc ...), from the resolved config
    mode: Optional[str] = None
    wandb_project: Optional[str] = None  # set when the runs log to W&B
    cells: list[Cell] = field(default_factory=list)
    baseline: Optional[Cell] = None  # the cell of the significance test (not part of the spec)
    max_epochs: dict[str, Optional[int]] = field(default_factory=dict)  # by cell, for the progress (not part of it)
    search: dict[str, str] = field(default_factory=dict)  # --search: key -> its space; the cells are its trials

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
    for key in sorted(set(old) | set(new)):
        if key not in new:
            raise ConfigError(f"{where} --grid {key}={_list(old[key])}, which is not given here{hint}")
        if key not in old:
            raise ConfigError(f"{where} no --grid {key}; here it is {_list(new[key])}{hint}")
        if [value_text(v) for v in old[key]] != [value_text(v) for v in new[key]]:
            flag = "--cells" if key == CELLS_KEY else f"--grid {key}="
            raise ConfigError(f"{where} {flag}{_list(old[key])}, here {_list(new[key])}{hint}")
    listed = [
        ({g["key"]: g.get("flags") for g in grid}).get(CELLS_KEY) for grid in (saved.get("grid", []), here["grid"])
    ]
    if listed[0] != listed[1]:
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
                f"{where} another resolved config for the cell {cell} (a config file it reads has changed since){hint}"
            )


def _list(values: list) -> str:
    return "[" + ",".join(value_text(v) for v in values) + "]"
