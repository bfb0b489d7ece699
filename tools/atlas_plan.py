"""The atlas's declaration (tools/atlas.yaml) read and checked: hosts, their cells, budgets, literature.

Every key is checked when the file is read; a wrong one is one line naming the host and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from framework.attention import available
from framework.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DECLARATION = ROOT / "tools" / "atlas.yaml"
#: The budgets: ``full`` (the atlas) and ``quick`` (its smoke test: the first two cells, one seed).
BUDGETS = ("full", "quick")


@dataclass(frozen=True)
class Literature:
    """A published figure of one cell, in the unit of our table (``metric``: the host's primary by default)."""

    cell: str
    figure: float
    paper: str
    note: str = ""
    metric: Optional[str] = None


@dataclass(frozen=True)
class Cell:
    """One block in a host: its name and the flags that put it there."""

    name: str
    flags: tuple[str, ...]


@dataclass(frozen=True)
class Host:
    name: str
    domain: str
    task: str
    config: str
    cells: tuple[Cell, ...]
    items: bool
    flags: dict[str, tuple[str, ...]]  # budget -> fit flags (a budget the host lacks: not in that atlas)
    literature: tuple[Literature, ...] = ()
    key: str = "model.attention"

    @property
    def baseline(self) -> Cell:
        return self.cells[0]

    def cells_of(self, budget: str) -> tuple[Cell, ...]:
        return self.cells[:2] if budget == "quick" else self.cells


@dataclass(frozen=True)
class Plan:
    seeds: int
    examples: int
    hosts: tuple[Host, ...] = field(default_factory=tuple)

    def host(self, name: str) -> Host:
        for host in self.hosts:
            if host.name == name:
                return host
        raise ConfigError(f"atlas: no host {name!r}; the hosts: {', '.join(h.name for h in self.hosts)}")

    def of(self, budget: str) -> tuple[Host, ...]:
        return tuple(host for host in self.hosts if budget in host.flags)


def _cell(host: str, key: str, entry: Any) -> Cell:
    if isinstance(entry, str):
        names = available()
        if entry != "none" and entry not in names:
            raise ConfigError(f"{DECLARATION.name}: host {host}: cell {entry!r} is no registered block nor 'none'")
        return Cell(entry, (f"--{key}={entry}",))
    if isinstance(entry, dict) and len(entry) == 1:
        ((name, flags),) = entry.items()
        return Cell(str(name), tuple(str(flags).split()))
    raise ConfigError(f"{DECLARATION.name}: host {host}: a cell is a block name or one NAME: FLAGS, got {entry!r}")


def _host(entry: dict[str, Any]) -> Host:
    name = entry.get("name", "?")
    required = ("name", "domain", "task", "config", "cells", "items")
    missing = [k for k in required if k not in entry]
    if missing:
        raise ConfigError(f"{DECLARATION.name}: host {name}: missing {', '.join(missing)}")
    unknown = sorted(set(entry) - {*required, *BUDGETS, "literature", "key"})
    if unknown:
        raise ConfigError(f"{DECLARATION.name}: host {name}: unknown key(s) {', '.join(unknown)}")
    if not (ROOT / entry["config"]).is_file():
        raise ConfigError(f"{DECLARATION.name}: host {name}: config {entry['config']} does not exist")
    key = entry.get("key", "model.attention")
    cells = tuple(_cell(name, key, c) for c in entry["cells"])
    if not 2 <= len(cells) <= 8 or len({c.name for c in cells}) != len(cells):
        raise ConfigError(f"{DECLARATION.name}: host {name}: 2 to 8 cells of distinct names, got {len(cells)}")
    literature = tuple(Literature(**item) for item in entry.get("literature") or [])
    strays = [item.cell for item in literature if item.cell not in {c.name for c in cells}]
    if strays:
        raise ConfigError(f"{DECLARATION.name}: host {name}: literature of no cell: {', '.join(strays)}")
    return Host(
        name=name,
        domain=entry["domain"],
        task=entry["task"],
        config=entry["config"],
        cells=cells,
        items=bool(entry["items"]),
        flags={budget: tuple(str(f) for f in entry[budget]) for budget in BUDGETS if budget in entry},
        literature=literature,
        key=key,
    )


def load(path: Path = DECLARATION) -> Plan:
    """The declaration at ``path``, checked."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path.name} is not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    hosts = tuple(_host(entry) for entry in data.get("hosts") or [])
    if len({h.name for h in hosts}) != len(hosts):
        raise ConfigError(f"{path.name}: two hosts share a name")
    return Plan(seeds=int(data.get("seeds", 3)), examples=int(data.get("examples", 256)), hosts=hosts)
