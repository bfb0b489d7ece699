"""An atlas of attention: which block for which task, measured across every domain.

    python -m tools.atlas --budget 60            # run for at most 60 minutes, then stop; the next call goes on
    python -m tools.atlas --hosts cora --seeds 3 # one host's cells
    python -m tools.atlas --quick                # 1 seed, tiny fits, the generated hosts: a smoke test
    python -m tools.atlas --report               # only the tables, of what has finished
    python -m tools.atlas --check                # exit 1 if docs/atlas.md is not what docs/atlas.csv gives
    python -m tools.atlas --wandb atlas          # also log the table to W&B (offline unless WANDB_MODE=online)

The hosts, their cells (the blocks), budgets and the papers' figures are declared in tools/atlas.yaml
(read by tools/atlas_plan.py). Each host is one ``python -m framework compare`` of its cells over
seeds (``runs/compare/atlas_<budget>_<host>/``; finished runs are not run again, a stopped fit resumes
from its last.ckpt), then ``evaluate`` of every run's best checkpoint: the uniform ablation drop, and
ERASER's comprehensiveness where the host's decisions rest on items (``runs/atlas/<budget>/<host>/
<cell>/seed<S>/evaluation.csv``, not redone once written). ``--budget`` stops the call after that
many minutes (the running fits save their last.ckpt); the same command continues where it stopped.
The CSV is the atlas's ledger: a host whose runs are not on this machine (another session, a clean
clone) keeps its rows, and one measured over every seed is not run again unless named in ``--hosts``.
On a GPU machine compare runs one run per free GPU (``--jobs`` to choose).

Output: docs/atlas.csv and docs/atlas.md (``--out``; the quick atlas writes runs/atlas/quick/), a table
per domain and a summary across domains (tools/atlas_tables.py), which also goes into the README.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from framework.attention import available, info
from framework.errors import ConfigError
from framework.runs import write_text_atomically
from tools.atlas_plan import BUDGETS, ROOT, Cell, Host, load
from tools.atlas_tables import in_readme, read_csv, render, stale, write_csv
from tools.bench_measures import ablation_drop, value_of

if TYPE_CHECKING:
    from framework.commands.compare.results import Summary

comprehensiveness = value_of(test="eraser", measure="AOPC comprehensiveness")
README = ROOT / "README.md"
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def runs_root() -> Path:
    return Path(os.environ.get("FRAMEWORK_RUNS_DIR", ROOT / "runs"))


def compare_name(host: Host, budget: str) -> str:
    return f"atlas_{budget}_{host.name}"


def compare_args(host: Host, budget: str, seeds: int, jobs: Optional[int]) -> list[str]:
    cells = [f"{cell.name}: {' '.join(cell_flags(host, cell))}" for cell in host.cells_of(budget)]
    return [
        "--cells",
        *cells,
        "--config",
        "configs/logger/csv.yaml",
        "--attention_maps.every_n_epochs=0",
        *QUIET,
        *host.flags[budget],
        "--seeds",
        str(seeds),
        *(["--jobs", str(jobs)] if jobs else []),
        "--name",
        compare_name(host, budget),
        "--baseline",
        host.baseline.name,
        "--status_every",
        "120",
    ]


def cell_flags(host: Host, cell: Cell) -> tuple[str, ...]:
    """A cell's fit flags: the host config and the cell's flags; a cell that names its own config (the
    DMN on bAbI, GAT on Cora) starts from that one alone, so that nothing of the host's stays (a
    memory network's LinearStart callback, say)."""
    return cell.flags if "--config" in cell.flags else ("--config", host.config, *cell.flags)


class Budget:
    """The minutes this call may run: at the end a SIGTERM stops the running command as the signal
    contract says (fits save last.ckpt); between commands the atlas stops before starting another."""

    def __init__(self, minutes: Optional[float]) -> None:
        self.deadline = None if minutes is None else time.monotonic() + 60 * minutes
        self.spent = False
        self._timer: Optional[threading.Timer] = None

    def __enter__(self) -> Budget:
        if self.deadline is not None:
            self._previous = signal.signal(signal.SIGTERM, self._between_commands)
            self._timer = threading.Timer(self.deadline - time.monotonic(), self._stop)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
            signal.signal(signal.SIGTERM, self._previous)

    def _stop(self) -> None:
        self.spent = True
        os.kill(os.getpid(), signal.SIGTERM)

    def _between_commands(self, signum: int, frame: object) -> None:
        if not self.spent:  # a SIGTERM from outside, between commands
            raise SystemExit(128 + signum)

    def left(self) -> bool:
        return not self.spent and (self.deadline is None or time.monotonic() < self.deadline)

    def stopped(self, exit: SystemExit) -> bool:
        """Whether ``exit`` is a command stopped by this budget (else a failure or a stop from outside)."""
        return self.spent and exit.code == 128 + signal.SIGTERM


def run_host(host: Host, budget: str, args: argparse.Namespace, limit: Budget) -> Optional[Summary]:
    """The host's comparison (resumed), then the evaluations of its runs; compare's summary when every
    run finished (else None: the tables are read again with ``--report``)."""
    from framework.commands.compare import main as compare

    print(f"[{time.strftime('%H:%M:%S')}] atlas: {host.name} ({host.task})", flush=True)
    summary = None
    try:
        summary = compare(compare_args(host, budget, args.seeds, args.jobs))
    except SystemExit as exit:
        if limit.stopped(exit):
            return None
        if exit.code not in (0, None, 1):  # 1: some runs failed; compare named them; the others are tabulated
            raise
    for cell in host.cells_of(budget):
        for seed in range(args.seeds):
            if not limit.left():
                return None
            evaluate(host, budget, cell.name, seed, args.examples, limit)
    return summary


def run_folder(host: Host, budget: str, cell: str, seed: int) -> Path:
    return runs_root() / "compare" / compare_name(host, budget) / "runs" / cell / f"seed{seed}"


def table_of(host: Host, budget: str, cell: str, seed: int) -> Path:
    return runs_root() / "atlas" / budget / host.name / cell / f"seed{seed}" / "evaluation.csv"


def has_blocks(run: Path) -> bool:
    import json

    summary = json.loads((run / "summary.json").read_text())
    return bool(summary.get("fit", {}).get("provenance", {}).get("blocks"))


def evaluate(host: Host, budget: str, cell: str, seed: int, examples: int, limit: Budget) -> None:
    """``evaluate`` of one finished run's best checkpoint, unless done or the run has no attention block."""
    from framework.commands.evaluate import main as evaluate_command

    table, run = table_of(host, budget, cell, seed), run_folder(host, budget, cell, seed)
    checkpoint = run / "checkpoints" / "best.ckpt"
    if table.is_file() or not checkpoint.is_file() or not (run / "test").is_dir() or not has_blocks(run):
        return
    tests = "[ablation, eraser]" if host.items else "[ablation]"
    try:
        evaluate_command(
            [
                "--config",
                str(run / "config.yaml"),
                "--ckpt_path",
                str(checkpoint),
                *QUIET,
                "--trainer.logger=false",
                f"--examples={examples}",
                f"--tests={tests}",
                "--ablation_modes=[uniform]",
                "--run_dir",
                str(table.parent / "run"),
            ]
        )
    except SystemExit as exit:
        if limit.stopped(exit):
            return
        print(f"atlas: evaluate of {host.name} {cell} seed {seed} failed (status {exit.code})", file=sys.stderr)
        return
    (table.parent / "run" / "evaluation.csv").replace(table)


def block_of(flags: tuple[str, ...]) -> Optional[str]:
    """The block a cell's flags put in the model: a ``--model.<key>=<block>`` flag, else the first
    block that the model of its ``--config`` names (the DMN's ``attention``, the reader's ``matching``)."""
    import yaml

    given = [f.split("=", 1)[1] for f in flags if f.startswith("--model.") and "=" in f]
    if "--config" in flags:
        model = yaml.safe_load((ROOT / flags[flags.index("--config") + 1]).read_text()).get("model") or {}
        given += [str(v) for v in (model.get("init_args") or {}).values() if isinstance(v, str)]
    return next((name for name in given if name in available()), None)


def kind_of(cell: Cell, baseline: bool) -> str:
    """The cell's kind of block: its taxonomy category in the registry ('none (baseline)' for the baseline)."""
    if baseline:
        return "none (baseline)"
    name = block_of(cell.flags)
    return "-" if name is None else info(name).category


def mean_sd(values: list[Optional[float]]) -> tuple[Optional[float], Optional[float]]:
    found = [v for v in values if v is not None and not math.isnan(v)]
    if not found:
        return None, None
    return statistics.fmean(found), statistics.stdev(found) if len(found) > 1 else None


def host_rows(host: Host, budget: str, seeds: int, summary: Optional[Summary]) -> list[dict[str, object]]:
    """The CSV rows of one host's cells, from compare's ``summary`` (else its tables, ``--report``) and
    the evaluations."""
    from framework.commands.compare import main as compare

    if summary is None:
        if not (runs_root() / "compare" / compare_name(host, budget) / "spec.json").is_file():
            return []
        summary = compare([*compare_args(host, budget, seeds, None), "--report"])
    rows, declared = [], {c.name: c for c in host.cells_of(budget)}
    for cell, row in zip(summary.cells, summary.rows):
        if cell.name not in declared:  # a cell the declaration no longer has (its runs stay in the comparison)
            continue
        records = summary.records[cell.name]
        tables = [read_csv(table_of(host, budget, cell.name, r.seed)) for r in records]
        drop = mean_sd([ablation_drop(t) if t else None for t in tables])
        comp = mean_sd([comprehensiveness(t) if t else None for t in tables])
        stamps = [r.fit.get("provenance", {}) for r in records]
        declared_cell = declared[cell.name]
        metric = summary.metric or ""
        rows.append(
            {
                "budget": budget,
                "domain": host.domain,
                "host": host.name,
                "cell": cell.name,
                "kind": kind_of(declared_cell, cell.name == host.baseline.name),
                "baseline": cell.name == host.baseline.name,
                "n": row["n"],
                "seeds": row["seeds"],
                "metric": metric,
                "mean": row.get(f"{metric}_mean"),
                "std": row.get(f"{metric}_std"),
                "delta": row.get(f"delta_{metric}"),
                "p": row.get("p_value"),
                "seconds_per_epoch": row.get("seconds_per_epoch_mean"),
                "peak_memory_mb": row.get("peak_memory_mb_mean"),
                "fit_seconds": sum(r.fit.get("wall_seconds") or 0.0 for r in records) if records else None,
                "ablation_drop": drop[0],
                "ablation_drop_std": drop[1],
                "comprehensiveness": comp[0],
                "comprehensiveness_std": comp[1],
                "commit": stamp([(s.get("code") or {}).get("commit") for s in stamps]),
                "config_hash": stamp([s.get("config_hash") for s in stamps]),
                "data_hash": stamp([(s.get("data") or {}).get("content_key") for s in stamps]),
            }
        )
    return rows


def kept_rows(host: Host, budget: str, previous: list[dict[str, str]]) -> list[dict[str, str]]:
    """The host's rows of an earlier call whose runs are not on this machine (another session, a clean
    clone): the CSV is the atlas's ledger, so a host is measured once and kept until its runs are here
    again. Rows of cells no longer declared go."""
    cells = {cell.name for cell in host.cells_of(budget)}
    return [row for row in previous if row["host"] == host.name and row["cell"] in cells]


def merged(here: list[dict[str, object]], kept: list[dict[str, str]]) -> list[dict[str, object]]:
    """A host's rows: those of its runs here, each unless the ledger's row of the cell counts more seeds
    (a host measured elsewhere and begun again here keeps its figures until the new runs overtake them)."""
    if not here:
        return list(kept)
    ledger = {row["cell"]: row for row in kept}
    return [
        ledger[row["cell"]] if row["cell"] in ledger and int(ledger[row["cell"]]["n"]) > int(row["n"] or 0) else row
        for row in here
    ]


def measured(host: Host, budget: str, seeds: int, previous: list[dict[str, str]]) -> bool:
    """Whether the ledger holds every cell of the host over ``seeds`` seeds and its runs are not here
    (where they are, compare itself says what is finished and resumes the rest)."""
    if (runs_root() / "compare" / compare_name(host, budget) / "spec.json").is_file():
        return False
    rows = kept_rows(host, budget, previous)
    return len(rows) == len(host.cells_of(budget)) and all(int(row["n"]) >= seeds for row in rows)


def stamp(values: list[Optional[str]]) -> str:
    """The distinct values of one stamp over a cell's runs, space-separated; a run without one (generated
    data, a run from before the stamp) counts as '-' where others have it."""
    found = sorted({value or "-" for value in values})
    return "" if found == ["-"] else " ".join(found)


def log_to_wandb(rows: list[dict[str, object]], project: str, folder: Path) -> None:
    """The atlas's CSV as the W&B table ``atlas`` (offline unless WANDB_MODE=online)."""
    import wandb

    from framework.loggers import WandbLogger
    from tools.atlas_tables import COLUMNS

    logger = WandbLogger(
        name="atlas", save_dir=str(folder), project=project, offline=os.environ.get("WANDB_MODE") != "online"
    )
    logger.experiment.log({"atlas": wandb.Table(columns=list(COLUMNS), data=[[r[c] for c in COLUMNS] for r in rows])})
    logger.finalize("success")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tools.atlas", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="the smoke test: 1 seed, tiny fits, the generated hosts")
    p.add_argument("--budget", type=float, default=None, help="minutes this call may run (default: no limit)")
    p.add_argument("--hosts", nargs="+", default=None, help="only these hosts (default: all of the budget)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per cell (default: the declaration's; quick 1)")
    p.add_argument("--examples", type=int, default=None, help="test examples per evaluation (quick: 16)")
    p.add_argument("--jobs", type=int, default=None, help="runs at once (default: compare's: one per free GPU)")
    p.add_argument("--out", type=Path, default=None, help="folder of atlas.csv and atlas.md (default docs/)")
    p.add_argument("--report", action="store_true", help="only rewrite the tables, of the runs that finished")
    p.add_argument("--check", action="store_true", help="exit 1 if atlas.md is not what atlas.csv gives")
    p.add_argument("--wandb", metavar="PROJECT", default=None, help="log the table to this W&B project")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = parser().parse_args(argv)
    budget = BUDGETS[1] if args.quick else BUDGETS[0]
    try:
        plan = load()
        hosts = [plan.host(name) for name in args.hosts] if args.hosts else list(plan.of(budget))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    missing = [h.name for h in hosts if budget not in h.flags]
    if missing:
        print(f"error: --hosts: {', '.join(missing)} have no {budget} budget in tools/atlas.yaml", file=sys.stderr)
        return 2
    os.environ.setdefault("FRAMEWORK_DATA_DIR", str(ROOT.parent / "shared" / "data"))  # the real data sets
    args.seeds = args.seeds or (1 if args.quick else plan.seeds)
    args.examples = args.examples or (16 if args.quick else plan.examples)
    out = args.out or (runs_root() / "atlas" / "quick" if args.quick else ROOT / "docs")
    readme = README if out == ROOT / "docs" and budget == "full" else None  # the summary there too
    if args.check:
        if stale(plan, budget, out / "atlas.csv", out / "atlas.md", readme):
            print(
                f"{out / 'atlas.md'}{' or the README' if readme else ''} is not what {out / 'atlas.csv'} gives: "
                "run `python -m tools.atlas --report`"
            )
            return 1
        return 0
    previous = read_csv(out / "atlas.csv")
    summaries: dict[str, Optional[Summary]] = {}
    with Budget(args.budget) as limit:
        for host in hosts:
            if args.report or not limit.left():
                break
            if not args.hosts and measured(host, budget, args.seeds, previous):
                print(f"atlas: {host.name} measured already ({out / 'atlas.csv'}); --hosts {host.name} measures again")
                continue
            summaries[host.name] = run_host(host, budget, args, limit)
    rows = [
        row
        for h in plan.of(budget)
        for row in merged(host_rows(h, budget, args.seeds, summaries.get(h.name)), kept_rows(h, budget, previous))
    ]
    write_csv(rows, out / "atlas.csv")
    write_text_atomically(out / "atlas.md", render(plan, budget, read_csv(out / "atlas.csv")))
    if readme is not None:
        write_text_atomically(readme, in_readme(readme.read_text(), plan, read_csv(out / "atlas.csv")))
    if args.wandb:
        log_to_wandb(rows, args.wandb, out)
    done = {h.name for h in plan.of(budget) if all(int(r["n"]) >= args.seeds for r in rows if r["host"] == h.name)}
    left = [h.name for h in plan.of(budget) if h.name not in done or not any(r["host"] == h.name for r in rows)]
    print(f"atlas: {out / 'atlas.md'} and {out / 'atlas.csv'} written", flush=True)
    if left:
        print(f"atlas: not finished: {', '.join(left)}; the same command goes on where it stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
