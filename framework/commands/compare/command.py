"""``python -m framework compare``: the command line of a comparison."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import NoReturn, Optional

from ... import signals
from ...errors import ConfigError
from ...values import NonNegativeFloat, NonNegativeInt, PositiveInt, Seed, argument
from ..help import style
from . import executors, plots, results, sweep
from .comparison import Spec, check_resumable, comparison_folder, config_hash, default_name, extend
from .grid import CELLS_KEY, CONFIG_KEY, parse_cells, parse_grid, split_config_flags
from .grid_status import GridProgress, Stopping
from .resolve import has_key, resolve, resolve_cells, wandb_project
from .runner import RunPlan, RunResult, explain_failures, fit_arguments, state

DESCRIPTION = (
    "Run a grid of configs over seeds (a fit and a test per run) and compare them: mean ± std of the test "
    "metrics, time, memory, a paired t-test against a baseline, best-of-N. The cells are a --grid of config "
    "values, listed --cells, or an Optuna --search; --verify reruns one recorded run. Flags it does not know "
    "(--config, --trainer.max_epochs=3 ...) are given to every fit."
)
EXAMPLES = (
    "--config domains/vision/ccnet.yaml \\\n--grid model.attention=[criss_cross,danet,non_local,none] --seeds 5",
    "--config domains/demo/demo.yaml --grid model.attention=[mhsa,local,none] \\\n"
    "--grid optimizer.init_args.lr=[0.003,0.001] --seeds 3 --jobs 2 --baseline none --trainer.max_epochs=4",
    "--grid config=[domains/graph/gat_cora.yaml,domains/graph/gcn_cora.yaml] --seeds 10 \\\n"
    "--config configs/logger/csv.yaml",
    "--cells 'mhsa: --config domains/demo/demo.yaml' \\\n"
    "'baseline: --config domains/demo/demo.yaml --model.attention=none --model.dim=32' --seeds 3",
    "--config domains/demo/demo.yaml --search optimizer.init_args.lr=loguniform(1e-4,1e-2) \\\n"
    "--search model.dim=int(32,128) --search model.attention=[mhsa,local] --trials 20 --pruner median",
    "... --verify mhsa --seed 0    # rerun one recorded run: are its numbers the recorded ones?",
    "... --executor submitit --submitit slurm_partition=gpu --submitit gpus_per_node=1 --submitit timeout_min=240",
    "... --sweep          # write runs/compare/<name>/sweep.yaml, a W&B grid sweep, and stop",
    "... --report         # only the tables and plots of the runs that finished",
)
NOTES = """
Each cell x seed is `python -m framework fit ... --seed_everything=S --run_dir=runs/compare/<name>/runs/<cell>/seedS`,
then `test` of its best checkpoint, both in a warm worker process (one per --jobs slot); finished runs are not run
again. Results: results.md, results.csv, runs.csv, metric.png and curves.png in runs/compare/<name>/ (under
$FRAMEWORK_RUNS_DIR when set); a search adds study.db (Optuna, resumable) and best.yaml (fit --config best.yaml).
While it runs, a status line shows the runs done, the running ones with their epoch, and an ETA. Ctrl-C or
SIGTERM stops the grid (the running fits save a resumable last.ckpt), prints the table of the finished runs and
exits 130 or 143; the same command resumes it."""
RESERVED = ("--run_dir", "--seed_everything", "--ckpt_path", "--print_config", "--experiment")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line and a hint (not the usage), status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"error: {message}\n({self.prog} --help lists the options)\n")
        raise SystemExit(2)


def parser() -> argparse.ArgumentParser:
    p = Parser(**style("compare", DESCRIPTION, EXAMPLES, notes=NOTES), allow_abbrev=False)
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=[V1,V2,...]",
        help="a config key and its values (YAML list); several --grid make the product; "
        "the key `config` takes config files",
    )
    p.add_argument(
        "--cells",
        action="extend",
        nargs="+",
        default=[],
        metavar="'NAME: FLAGS'",
        help="cells listed one by one, each a name and its flags (its --config files and overrides), or "
        "a YAML file of NAME: FLAGS entries; crossed with any --grid",
    )
    p.add_argument(
        "--search",
        action="append",
        default=[],
        metavar="KEY=SPACE",
        help="search a config key with Optuna's TPE instead of a grid: uniform(A,B), loguniform(A,B), "
        "int(A,B[,STEP]), logint(A,B) or a list [V1,V2,...] of choices",
    )
    p.add_argument(
        "--trials",
        type=argument(PositiveInt),
        default=10,
        help="--search: the trials of the search, in all (default 10)",
    )
    p.add_argument(
        "--pruner",
        choices=["median", "hyperband", "none"],
        default="median",
        help="--search: stop trials whose validation metric falls behind (Optuna's pruners; default median)",
    )
    p.add_argument(
        "--startup_trials",
        type=argument(NonNegativeInt),
        default=None,
        metavar="N",
        help="--search: trials TPE draws at random before it proposes (its n_startup_trials; default 10)",
    )
    p.add_argument(
        "--pruner_warmup",
        type=argument(NonNegativeInt),
        default=None,
        metavar="EPOCHS",
        help="--search: a trial's first EPOCHS epochs are never pruned (default max_epochs // 4, at least 1)",
    )
    p.add_argument(
        "--pruner_startup_trials",
        type=argument(NonNegativeInt),
        default=None,
        metavar="N",
        help="--search, --pruner median: no trial is pruned before N trials finished (default 5)",
    )
    p.add_argument(
        "--verify",
        default=None,
        metavar="CELL",
        help="rerun one recorded run of CELL (with --seed) into <comparison>/verify/ (kept only on a "
        "mismatch) and say whether its test metrics are the recorded ones",
    )
    p.add_argument(
        "--seed", type=argument(Seed), default=None, help="--verify: the seed of the run (default the first)"
    )
    p.add_argument(
        "--tolerance",
        type=argument(NonNegativeFloat),
        default=1e-3,
        help="--verify: the largest difference accepted where the recorded run was not deterministic on "
        "this device (default 1e-3; a deterministic run on the same device must match exactly)",
    )
    p.add_argument(
        "--seeds", type=argument(PositiveInt), default=1, help="runs per cell, seeds FIRST .. FIRST+N-1 (default 1)"
    )
    p.add_argument("--first_seed", type=argument(Seed), default=0, help="the first seed (default 0)")
    p.add_argument(
        "--name", default=None, help="the comparison's folder under runs/compare/ (default: config and grid keys)"
    )
    p.add_argument(
        "--jobs",
        type=argument(PositiveInt),
        default=None,
        help="runs at once: default the number of free GPUs, or 1 on a CPU machine",
    )
    p.add_argument(
        "--threads",
        type=argument(PositiveInt),
        default=None,
        metavar="N",
        help="torch threads of each run (default: OMP_NUM_THREADS where exported, else cores // jobs)",
    )
    p.add_argument(
        "--executor",
        choices=["local", "submitit"],
        default="local",
        help="local warm worker processes (default) or a submitit job array (SLURM, or submitit's local executor)",
    )
    p.add_argument(
        "--submitit",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a submitit parameter (timeout_min=120, slurm_partition=gpu, gpus_per_node=1, cluster=local ...)",
    )
    p.add_argument("--baseline", default=None, help="the cell the others are tested against (default: the first cell)")
    p.add_argument(
        "--metric",
        default=None,
        help="the test metric of the significance test and best-of-N (default: the test counterpart of "
        "the task's checkpoint metric, test/acc for val/acc)",
    )
    p.add_argument(
        "--metrics",
        nargs="+",
        default=None,
        metavar="PATTERN",
        help="test metrics shown in results.md (glob patterns; default: the first six; results.csv has all)",
    )
    p.add_argument(
        "--train_metric",
        default=None,
        help="training metric of the best-of-N 'train' protocol, in its direction (default train/error, "
        "else train/loss)",
    )
    p.add_argument("--test_ckpt", choices=["best", "last"], default="best", help="the checkpoint each run tests")
    p.add_argument(
        "--test_override",
        action="append",
        default=[],
        metavar="FLAG",
        help="a flag for every test, e.g. --test_override=--task.beam_size=5",
    )
    p.add_argument("--report", action="store_true", help="only write the tables and plots of the finished runs")
    p.add_argument("--sweep", action="store_true", help="write the W&B sweep definition (sweep.yaml) and stop")
    p.add_argument("--dry_run", action="store_true", help="print the runs and their commands, run nothing")
    p.add_argument(
        "--status_every",
        type=argument(NonNegativeFloat),
        default=30.0,
        metavar="SECONDS",
        help="when stdout is no terminal (a log), print the status line every SECONDS (default 30; 0: "
        "never); on a terminal it is redrawn in place",
    )
    return p


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    options, run_args = parser().parse_known_args(argv)
    for arg in run_args:
        name = arg.split("=", 1)[0]
        if name in RESERVED:
            raise ConfigError(f"{name}: set by compare for every run; it cannot be given to a comparison")
        if name == "--grid" or name.startswith("--grid."):
            raise ConfigError(f"{arg}: write --grid KEY=[values]")
    if options.search and (options.grid or options.cells):
        raise ConfigError("--search: a search chooses its own cells (trials); give it no --grid or --cells")
    grid_only = [
        flag
        for flag, given in (
            ("--verify", options.verify),
            ("--sweep", options.sweep),
            ("--executor submitit", options.executor == "submitit"),
            ("--baseline", options.baseline),
            ("--report", options.report),
            ("--dry_run", options.dry_run),
        )
        if given
    ]
    search_only = [
        flag
        for flag, given in (
            ("--startup_trials", options.startup_trials is not None),
            ("--pruner_warmup", options.pruner_warmup is not None),
            ("--pruner_startup_trials", options.pruner_startup_trials is not None),
        )
        if given
    ]
    if search_only and not options.search:
        raise ConfigError(f"{search_only[0]} sets how a --search draws or prunes its trials; a grid has none")
    if options.search and grid_only:
        raise ConfigError(
            f"{grid_only[0]} takes a --grid or --cells comparison, not a --search (its trials run on "
            "local warm workers; the best trial is the baseline)"
        )
    if options.sweep and options.cells:
        raise ConfigError("--sweep: a W&B sweep takes --grid keys; --cells cannot be one")
    if options.name is not None and (not options.name or "/" in options.name or options.name in (".", "..")):
        raise ConfigError(f"--name {options.name!r}: a folder name, without '/'")
    return options, run_args


def build_spec(options: argparse.Namespace, run_args: list[str]) -> Spec:
    listed = parse_cells(options.cells)
    axes = ([listed] if listed else []) + parse_grid(options.grid)
    has_config = any(a in ("--config", "-c") or a.startswith("--config=") for a in run_args)
    if (
        not has_config
        and not any(axis.key == CONFIG_KEY for axis in axes)
        and not (listed and all(split_config_flags(list(flags))[0] for flags in listed.flags))
    ):
        raise ConfigError(
            "compare needs a config: --config CONFIG (or --grid config=[A,B], or a --config in every cell of --cells)"
        )
    name = options.name or default_name(run_args, axes)
    seeds = list(range(options.first_seed, options.first_seed + options.seeds))
    spec = Spec(
        name=name,
        folder=comparison_folder(name).resolve(),
        run_args=run_args,
        axes=axes,
        seeds=seeds,
        test_args=list(options.test_override),
        test_ckpt=options.test_ckpt,
    )
    spec.added = extend(spec)  # the cells it has, and new --grid values or --cells entries after them
    spec.baseline = spec.cell(options.baseline) if options.baseline else (spec.cells[0] if spec.cells else None)
    return spec


def check_cells(spec: Spec) -> None:
    """Resolve every cell's config (an error names the --grid flag), remember hashes and the W&B project."""
    try:
        resolved = resolve_cells(spec.cells, spec.run_args, spec.keys)
    except ConfigError:
        first = spec.cells[0]
        base, _ = resolve([*first.config_args, *spec.run_args])
        if base is not None:
            import yaml

            config = yaml.safe_load(base) or {}
            for key in spec.keys:
                if key not in (CONFIG_KEY, CELLS_KEY) and not has_key(config, key):
                    raise ConfigError(f"--grid {key}: the config has no key {key}") from None
        raise
    spec.resolved = {name: config_hash(text) for name, text in resolved.items()}
    spec.resolved_texts = resolved
    spec.wandb_project = wandb_project(next(iter(resolved.values())))
    import yaml

    configs = {name: yaml.safe_load(text) or {} for name, text in resolved.items()}
    spec.max_epochs = {name: max_epochs(config) for name, config in configs.items()}
    spec.stopping = {name: Stopping.of(config) for name, config in configs.items()}


def max_epochs(config: dict) -> Optional[int]:
    """A resolved config's ``trainer.max_epochs``; None when unset or unbounded (-1)."""
    value = (config.get("trainer") or {}).get("max_epochs")
    return value if isinstance(value, int) and value > 0 else None


def plans(spec: Spec) -> list[RunPlan]:
    """Every run, seed by seed (all cells of a seed before the next seed): a comparison stopped
    half-way has about as many runs of every cell."""
    return [
        RunPlan(
            cell=cell.name,
            label=cell.label,
            seed=seed,
            run_dir=str(spec.run_dir(cell, seed)),
            fit_args=fit_arguments(cell.config_args, spec.run_args, cell.args),
            test_args=spec.test_args,
            test_ckpt=spec.test_ckpt,
            group=spec.name,
        )
        for seed in spec.seeds
        for cell in spec.cells
    ]


def report(spec: Spec, options: argparse.Namespace) -> results.Summary:
    records, missing = results.collect(spec.run_dir, spec.cells, spec.seeds)
    summary = results.summarize(
        spec.name,
        spec.cells,
        records,
        spec.keys,
        spec.seeds,
        missing,
        metric=options.metric,
        patterns=options.metrics,
        baseline=spec.baseline,
        train_metric=options.train_metric,
    )
    if options.metric and summary.metrics and options.metric not in summary.metrics:
        raise ConfigError(
            f"--metric {options.metric}: the runs logged no such test metric; they logged {', '.join(summary.metrics)}"
        )
    paths = results.write(summary, spec.folder)
    images = plots.plot(summary, spec.folder) if any(records.values()) else []
    print("\n" + results.markdown(summary), flush=True)
    print(f"Written: {', '.join(str(p) for p in [*paths.values(), *images])}", flush=True)
    if spec.wandb_project and images:
        try:
            where = plots.log_to_wandb(
                summary, spec.folder, spec.wandb_project, spec.name, images, paths["results.csv"]
            )
            print(f"W&B: the tables and plots are logged in the group {spec.name} ({where})", flush=True)
        except Exception as err:  # the tables are written; W&B is a copy
            print(f"warning: could not log the comparison to W&B: {type(err).__name__}: {err}", file=sys.stderr)
    return summary


def main(argv: Optional[list[str]] = None) -> Optional[results.Summary]:
    options, run_args = parse(sys.argv[1:] if argv is None else argv)
    if options.search:
        from .search import search

        return search(options, run_args)
    spec = build_spec(options, run_args)
    if options.verify:
        from .verify import verify

        check_resumable(spec)
        verify(spec, options)
        return None
    if not options.report:
        check_cells(spec)
    else:  # the tables of what exists: the saved spec knows where the runs log
        from .comparison import load

        spec.wandb_project = load(spec.folder).get("wandb_project")
    check_resumable(spec)
    if options.sweep:
        spec.save()
        path = sweep.write(spec)
        print(
            f"W&B sweep of {len(spec.cells)} cell(s) x {len(spec.seeds)} seed(s): {path}\n"
            f"  wandb sweep {path}\n  wandb agent <entity>/<project>/<sweep id>     # on every machine\n"
            f"then, where the run folders are: the same compare command with --report"
        )
        return None
    all_plans = plans(spec)
    if options.dry_run:
        for plan in all_plans:
            print(
                f"{plan.key} ({state(Path(plan.run_dir))}): python -m framework fit {' '.join(plan.fit_args)} "
                f"--seed_everything={plan.seed} --run_dir={plan.run_dir}"
            )
        return None
    outcome: list[RunResult] = []
    if not options.report:
        spec.save()
        todo = [p for p in all_plans if state(Path(p.run_dir)) != "done"]
        added = (
            f" ({len(spec.added)} new: {', '.join(c.label for c in spec.added)})"
            if spec.added and len(spec.added) < len(spec.cells)
            else ""
        )
        print(
            f"Comparison {spec.name}: {len(spec.cells)} cell(s){added} x {len(spec.seeds)} seed(s) = {len(all_plans)} "
            f"runs, {len(all_plans) - len(todo)} finished already; running {len(todo)} ({options.executor}) in "
            f"{spec.folder}",
            flush=True,
        )
        outcome = run(spec, options, todo) if todo else []
    summary = report(spec, options)
    if summary.missing:
        names = f"{', '.join(summary.missing[:5])}{' ...' if len(summary.missing) > 5 else ''}"
        if options.report:  # the tables of what finished are what --report asks for
            print(
                f"note: {len(summary.missing)} run(s) not finished ({names}); the tables count the finished ones",
                file=sys.stderr,
                flush=True,
            )
            return summary
        explain_failures(outcome, summary.missing)
        raise SystemExit(1)
    return summary


def run(spec: Spec, options: argparse.Namespace, todo: list[RunPlan]) -> list[RunResult]:
    """Run ``todo`` with a live status; stopped (Ctrl-C, SIGTERM), it prints the table of the finished
    runs and ends as :mod:`framework.signals` says."""
    start = time.perf_counter()
    try:
        with GridProgress(len(todo), spec.max_epochs, options.status_every, spec.stopping) as progress:
            if options.executor == "submitit":
                outcome = executors.run_submitit(
                    todo, spec.folder, options.jobs, options.submitit, progress, options.threads
                )
            else:
                outcome = executors.run_local(todo, options.jobs, progress, options.threads)
    except executors.GridStopped as stop:
        ended = stop.results
        print(
            f"stopped after {time.perf_counter() - start:.0f} s: {sum(r.ok for r in ended)} run(s) done, "
            f"{sum(not r.ok and not r.stopped for r in ended)} failed, {sum(r.stopped for r in ended)} stopped, "
            f"{len(todo) - len(ended)} not started",
            flush=True,
        )
        report(spec, options)
        raise signals.Stopped() from None
    failed = [r for r in outcome if not r.ok]
    print(
        f"{len(outcome) - len(failed)} run(s) done, {len(failed)} failed, in {time.perf_counter() - start:.0f} s",
        flush=True,
    )
    return outcome
