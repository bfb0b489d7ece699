"""A comparison as a W&B sweep, for agents on any number of machines.

``python -m framework compare <the comparison's arguments> --sweep`` writes
``runs/compare/<name>/sweep.yaml``: a ``grid`` sweep over the ``--grid`` keys and
``seed_everything`` (one sweep run per cell and seed), whose command runs
``python -m framework.commands.compare.agent`` with the comparison's arguments. On every machine::

    wandb sweep runs/compare/<name>/sweep.yaml           # once: prints the sweep id
    wandb agent <entity>/<project>/<sweep id>            # on each machine, in the project's folder and environment

Each sweep run is a fit and a test of one cell and seed, in the run folder that ``compare``
would give it (``runs/compare/<name>/runs/<cell>/seed<s>``), logged to the sweep's W&B run.
Where the machines share the ``runs`` folder (``FRAMEWORK_RUNS_DIR``), the same ``compare``
command with ``--report`` then writes the tables and plots from the finished runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml

from ...runs import write_text_atomically
from .comparison import Spec
from .grid import CONFIG_KEY

AGENT_MODULE = "framework.commands.compare.agent"


def definition(spec: Spec, metric: Optional[str] = None, goal: str = "maximize") -> dict[str, Any]:
    """The W&B sweep configuration of a comparison (a dict, written as YAML)."""
    parameters: dict[str, Any] = {axis.key: {"values": list(axis.values)} for axis in spec.axes}
    parameters["seed_everything"] = {"values": list(spec.seeds)}
    agent_args = ["--name", spec.name, "--grid_keys", ",".join(spec.keys) or "-", "--test_ckpt", spec.test_ckpt]
    for arg in spec.test_args:
        agent_args.append(f"--test_override={arg}")
    sweep: dict[str, Any] = {
        "name": spec.name,
        "program": "framework/commands/compare/agent.py",
        "method": "grid",
        "parameters": parameters,
        "command": ["${env}", "${interpreter}", "-m", AGENT_MODULE, *agent_args, "--", *spec.run_args, "${args}"],
    }
    if spec.wandb_project:
        sweep["project"] = spec.wandb_project
    if metric:
        sweep["metric"] = {"name": metric, "goal": goal}
    return sweep


def write(spec: Spec, metric: Optional[str] = None, goal: str = "maximize") -> Path:
    path = spec.folder / "sweep.yaml"
    spec.folder.mkdir(parents=True, exist_ok=True)
    header = (
        f"# W&B sweep of the comparison {spec.name}: `wandb sweep {path}`, then `wandb agent <entity>/<project>/"
        "<sweep id>` on every machine (in the project's folder, its environment active).\n"
        f"# One sweep run = fit + test of one cell and seed (python -m {AGENT_MODULE}); `--grid config` values "
        f"({CONFIG_KEY}) are put before the other --config files.\n"
    )
    write_text_atomically(path, header + yaml.safe_dump(definition(spec, metric, goal), sort_keys=False, width=1000))
    return path
