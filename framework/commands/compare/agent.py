"""One run of a comparison started by a W&B sweep agent (see :mod:`framework.commands.compare.sweep`)::

    python -m framework.commands.compare.agent --name NAME --grid_keys model.attention [--test_ckpt best]
        [--test_override=FLAG ...] -- <the comparison's run arguments> --model.attention=cbam --seed_everything=2

The flags after ``--`` that set a grid key or ``seed_everything`` (the agent's ``${args}``)
choose the cell and the seed; the run goes into the folder ``compare`` gives it
(``runs/compare/<name>/runs/<cell>/seed<s>``): a fit, then a test of its best checkpoint.
Under an agent (``WANDB_RUN_ID`` set) both log to the sweep's W&B run.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

import yaml

from ...errors import ConfigError
from .comparison import comparison_folder
from .grid import CONFIG_KEY, Axis, cells
from .runner import RunPlan, execute, fit_arguments


def split(argv: list[str], keys: list[str]) -> tuple[list[str], dict[str, object], Optional[int]]:
    """The run arguments without the grid's and the seed's flags; the grid values; the seed."""
    rest, values, seed = [], {}, None
    for arg in argv:
        name, sep, value = arg.partition("=")
        key = name[2:] if name.startswith("--") else None
        if sep and key == "seed_everything":
            seed = int(value)
        elif sep and key in keys:
            values[key] = value if key == CONFIG_KEY else yaml.safe_load(value) if value else value
        else:
            rest.append(arg)
    return rest, values, seed


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own, run = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="python -m framework.commands.compare.agent", allow_abbrev=False)
    parser.add_argument("--name", required=True)
    parser.add_argument("--grid_keys", default="-")
    parser.add_argument("--test_ckpt", choices=["best", "last"], default="best")
    parser.add_argument("--test_override", action="append", default=[])
    options = parser.parse_args(own)
    keys = [k for k in options.grid_keys.split(",") if k and k != "-"]
    run_args, values, seed = split(run, keys)
    missing = [k for k in keys if k not in values]
    if missing or seed is None:
        raise ConfigError(
            f"the agent's arguments set no {', '.join(missing + ([] if seed is not None else ['seed_everything']))}"
        )
    (cell,) = cells([Axis(k, (values[k],)) for k in keys])
    run_id = os.environ.get("WANDB_RUN_ID")
    extra = []
    if run_id:
        from .resolve import resolve, wandb_project

        resolved, _ = resolve([*cell.config_args, *run_args, *cell.args])
        if (
            resolved
            and wandb_project(resolved)
            and isinstance((yaml.safe_load(resolved)["trainer"] or {}).get("logger"), dict)
        ):
            extra = [f"--trainer.logger.init_args.id={run_id}"]
    folder = comparison_folder(options.name).resolve()
    plan = RunPlan(
        cell=cell.name,
        label=cell.label,
        seed=seed,
        run_dir=str(folder / "runs" / cell.name / f"seed{seed}"),
        fit_args=[*fit_arguments(cell.config_args, run_args, cell.args), *extra],
        test_args=[*options.test_override, *extra],
        test_ckpt=options.test_ckpt,
        group=options.name,
    )
    result = execute(plan)
    print(
        f"{plan.key}: {'done' if result.ok else 'FAILED'} ({result.did}, {result.seconds:.0f} s) in {plan.run_dir}"
        + (f": {result.error}; log: {result.log}" if not result.ok else ""),
        flush=True,
    )
    return 0 if result.ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
