"""The results of a comparison: per cell, mean +- standard deviation over seeds of the test
metrics, seconds per training epoch and peak memory; a paired t-test against a baseline cell;
best-of-N selections. Read from the runs' ``summary.json`` files; written as ``results.csv``
(one row per cell), ``runs.csv`` (one row per run) and ``results.md``.

Standard deviations are the sample's (n - 1). The paired test is ``scipy.stats.ttest_rel`` over
the seeds that a cell and the baseline both finished (the same seed gives both the same data
order and initial draws where the models allow it). Best-of-N picks one run per cell without
looking at the test set, and reports that run's test metrics:

* ``val``: the best validation score of the task's checkpoint metric (``val/acc`` ...), in its direction;
* ``train``: the best final training error, as the MemN2N paper chose among 10 runs
  (``train/error`` when the task logs it, else ``train/loss``; ``--train_metric`` picks another,
  judged in the direction the task declares for it).
"""

from __future__ import annotations

import csv
import fnmatch
import io
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ...runs import read_summary, write_json_atomically, write_text_atomically
from .grid import Cell, value_text
from .runner import TEST_FOLDER

#: Markdown shows at most this many test metrics unless --metrics names them (the CSV has all).
SHOWN = 6
PROTOCOLS = ("val", "train")


@dataclass
class Record:
    """One finished run: its fit and test summaries."""

    cell: Cell
    seed: int
    run_dir: Path
    fit: dict
    test: dict

    @property
    def metrics(self) -> dict[str, float]:
        return self.test.get("metrics", {})

    @property
    def seconds_per_epoch(self) -> Optional[float]:
        return self.fit.get("seconds_per_epoch")

    @property
    def peak_memory_mb(self) -> Optional[float]:
        values = [s.get("peak_memory_mb") for s in (self.fit, self.test) if s.get("peak_memory_mb") is not None]
        return max(values) if values else None

    def final_train(self, metric: str) -> Optional[float]:
        history = self.fit.get("train_history") or []
        return history[-1].get(metric) if history else None


def collect(folder_of, cells: list[Cell], seeds: list[int]) -> tuple[dict[str, list[Record]], list[str]]:
    """Finished runs by cell name, and the keys (``cell/seedN``) of the runs that are not finished."""
    records: dict[str, list[Record]] = {cell.name: [] for cell in cells}
    missing = []
    for cell in cells:
        for seed in seeds:
            run_dir = folder_of(cell, seed)
            fit = read_summary(run_dir).get("fit", {})
            test = read_summary(run_dir / TEST_FOLDER).get("test", {})
            if fit.get("status") == "finished" and test.get("status") == "finished" and test.get("metrics"):
                records[cell.name].append(Record(cell, seed, run_dir, fit, test))
            else:
                missing.append(f"{cell.name}/seed{seed}")
    return records, missing


# -- statistics ------------------------------------------------------------------------------


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (nan for fewer than 2 values)."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return math.nan, math.nan
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else math.nan


@dataclass
class Paired:
    n: int
    delta: float  # mean of (cell - baseline) over the shared seeds
    t: float
    p: float


def paired_test(cell: dict[int, float], baseline: dict[int, float]) -> Paired:
    """Paired t-test (``scipy.stats.ttest_rel``) of a cell against the baseline over their shared seeds."""
    from scipy import stats

    seeds = sorted(set(cell) & set(baseline))
    a, b = [cell[s] for s in seeds], [baseline[s] for s in seeds]
    delta = statistics.fmean(x - y for x, y in zip(a, b)) if seeds else math.nan
    if len(seeds) < 2:
        return Paired(len(seeds), delta, math.nan, math.nan)
    result = stats.ttest_rel(a, b)
    return Paired(len(seeds), delta, float(result.statistic), float(result.pvalue))


def best_by_validation(records: list[Record]) -> Optional[Record]:
    """The run with the best validation score of its checkpoint metric (ties: the lowest seed)."""
    scored = [r for r in records if r.fit.get("best_score") is not None]
    if not scored:
        return None
    sign = -1.0 if scored[0].fit.get("mode") == "min" else 1.0
    return max(sorted(scored, key=lambda r: r.seed), key=lambda r: sign * r.fit["best_score"])


def best_by_training(records: list[Record], metric: str) -> Optional[Record]:
    """The run with the best final value of the training metric ``metric``, in the direction the
    runs' task declares (``summary.json``'s ``directions``; lower, as of a loss, where a run of an
    older version says none) (ties: the lowest seed)."""
    scored = [r for r in records if r.final_train(metric) is not None]
    if not scored:
        return None
    sign = -1.0 if scored[0].fit.get("directions", {}).get(metric, "min") == "max" else 1.0
    return min(sorted(scored, key=lambda r: r.seed), key=lambda r: sign * r.final_train(metric))


def training_metric(records: list[Record], chosen: Optional[str] = None) -> Optional[str]:
    """``chosen``, else ``train/error`` when every run logged it, else ``train/loss``."""
    if chosen:
        return chosen
    for metric in ("train/error", "train/loss"):
        if records and all(r.final_train(metric) is not None for r in records):
            return metric
    return None


# -- the table -------------------------------------------------------------------------------


@dataclass
class Summary:
    name: str
    cells: list[Cell]
    records: dict[str, list[Record]]
    keys: list[str]
    seeds: list[int]
    missing: list[str] = field(default_factory=list)
    metric: Optional[str] = None  # the primary test metric (significance, best-of-N)
    metrics: list[str] = field(default_factory=list)  # all test metrics, in a stable order
    shown: list[str] = field(default_factory=list)  # those in the Markdown table
    baseline: Optional[Cell] = None
    train_metric: Optional[str] = None
    monitor: Optional[str] = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    paired: dict[str, Paired] = field(default_factory=dict)
    best: dict[str, dict[str, Optional[Record]]] = field(default_factory=dict)


def primary_metric(monitor: Optional[str], metrics: list[str]) -> Optional[str]:
    """The test counterpart of the checkpoint metric (``val/acc`` -> ``test/acc``), else the first."""
    if monitor and monitor.startswith("val/") and f"test/{monitor[4:]}" in metrics:
        return f"test/{monitor[4:]}"
    return metrics[0] if metrics else None


def summarize(
    name: str,
    cells: list[Cell],
    records: dict[str, list[Record]],
    keys: list[str],
    seeds: list[int],
    missing: list[str],
    metric: Optional[str] = None,
    patterns: Optional[list[str]] = None,
    baseline: Optional[Cell] = None,
    train_metric: Optional[str] = None,
) -> Summary:
    everything = [r for rs in records.values() for r in rs]
    seen: dict[str, None] = {}
    for record in everything:
        seen.update(dict.fromkeys(record.metrics))
    metrics = list(seen)
    monitor = next((r.fit.get("monitor") for r in everything if r.fit.get("monitor")), None)
    summary = Summary(name, cells, records, keys, seeds, missing, metrics=metrics, monitor=monitor)
    summary.metric = metric or primary_metric(monitor, metrics)
    if patterns:
        shown = [m for m in metrics if any(fnmatch.fnmatchcase(m, p) for p in patterns)]
    else:
        shown = metrics[:SHOWN]
    if summary.metric in metrics and summary.metric not in shown:
        shown.insert(0, summary.metric)
    elif summary.metric in shown:
        shown.insert(0, shown.pop(shown.index(summary.metric)))
    summary.shown = shown
    summary.baseline = baseline or (cells[0] if cells else None)
    summary.train_metric = training_metric(everything, train_metric)
    base = (
        {r.seed: r.metrics.get(summary.metric) for r in records.get(summary.baseline.name, [])}
        if summary.baseline
        else {}
    )
    base = {s: v for s, v in base.items() if v is not None}
    for cell in cells:
        runs = records[cell.name]
        row: dict[str, Any] = {"cell": cell.label}
        for key in keys:
            row[key] = value_text(cell.values[key])
        row["n"] = len(runs)
        row["seeds"] = " ".join(str(r.seed) for r in runs)
        for m in metrics:
            row[f"{m}_mean"], row[f"{m}_std"] = mean_std([r.metrics.get(m) for r in runs])
        for what in ("seconds_per_epoch", "peak_memory_mb"):
            row[f"{what}_mean"], row[f"{what}_std"] = mean_std([getattr(r, what) for r in runs])
        row["epochs_mean"], _ = mean_std([r.fit.get("epochs") for r in runs])
        row["best_epoch_mean"], _ = mean_std([r.fit.get("best_epoch") for r in runs])
        if summary.monitor:
            row[f"best_{summary.monitor}_mean"], row[f"best_{summary.monitor}_std"] = mean_std(
                [r.fit.get("best_score") for r in runs]
            )
        if summary.metric and summary.baseline is not None and cell.name != summary.baseline.name:
            values = {r.seed: r.metrics[summary.metric] for r in runs if summary.metric in r.metrics}
            test = summary.paired[cell.name] = paired_test(values, base)
            row.update(
                {
                    "baseline": summary.baseline.label,
                    f"delta_{summary.metric}": test.delta,
                    "t": test.t,
                    "p_value": test.p,
                    "n_paired": test.n,
                }
            )
        chosen = {
            "val": best_by_validation(runs),
            "train": best_by_training(runs, summary.train_metric) if summary.train_metric else None,
        }
        summary.best[cell.name] = chosen
        for protocol, record in chosen.items():
            row[f"best_{protocol}_seed"] = record.seed if record else None
            for m in metrics:
                row[f"best_{protocol}_{m}"] = record.metrics.get(m) if record else None
        summary.rows.append(row)
    return summary


def _pm(mean: float, std: float, digits: int = 4) -> str:
    if mean is None or math.isnan(mean):
        return "-"
    return f"{mean:.{digits}f}" if std is None or math.isnan(std) else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _num(value: Optional[float], digits: int = 4) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _p(value: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.2g}" if value >= 1e-4 else "<1e-4"


def markdown(summary: Summary) -> str:
    """The comparison as Markdown: the main table, then best-of-N."""
    lines = []
    n_seeds = len(summary.seeds)
    lines.append(f"## {summary.name}")
    lines.append("")
    lines.append(
        f"{len(summary.cells)} cell(s) x {n_seeds} seed(s) (seeds {_seeds(summary.seeds)}); test metrics of "
        f"each run's checkpoint with the best {summary.monitor or 'validation score'}; mean ± sample std "
        "over the seeds; s/epoch = training seconds per epoch (validation excluded), median per run; "
        "peak MB = the run's peak memory."
    )
    lines.append("")
    base = summary.baseline
    compare = summary.metric and base is not None and len(summary.cells) > 1
    header = ["cell", "n", *summary.shown, "s/epoch", "peak MB", "epochs"]
    if compare:
        header += [f"Δ {summary.metric} vs {base.label}", "p (paired t, n)"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    for cell, row in zip(summary.cells, summary.rows):
        label = cell.label + (" (baseline)" if compare and cell.name == base.name else "")
        cells = [label, str(row["n"])]
        cells += [_pm(row[f"{m}_mean"], row[f"{m}_std"]) for m in summary.shown]
        cells += [
            _pm(row["seconds_per_epoch_mean"], row["seconds_per_epoch_std"], 2),
            _num(row["peak_memory_mb_mean"], 0),
            _num(row["epochs_mean"], 1),
        ]
        if compare:
            test = summary.paired.get(cell.name)
            cells += ["" if test is None else f"{test.delta:+.4f}", "" if test is None else f"{_p(test.p)} ({test.n})"]
        lines.append("| " + " | ".join(cells) + " |")
    hidden = [m for m in summary.metrics if m not in summary.shown]
    if hidden:
        lines.append("")
        lines.append(
            f"{len(hidden)} more test metric(s) in results.csv "
            f"({', '.join(hidden[:4])}{' ...' if len(hidden) > 4 else ''})."
        )
    if summary.metric and any(any(v is not None for v in chosen.values()) for chosen in summary.best.values()):
        lines.append("")
        lines.append(
            f"Best of N: the {', '.join(summary.shown[:3])} of one run per cell, chosen without the test set "
            f"(best validation {summary.monitor}; lowest final {summary.train_metric or 'training metric'})."
        )
        lines.append("")
        head = [
            "cell",
            f"best {summary.monitor}: seed",
            *summary.shown[:3],
            f"lowest {summary.train_metric}: seed",
            *summary.shown[:3],
        ]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for cell in summary.cells:
            chosen = summary.best.get(cell.name, {})
            cells = [cell.label]
            for protocol in PROTOCOLS:
                record = chosen.get(protocol)
                cells.append(str(record.seed) if record else "-")
                cells += [_num(record.metrics.get(m)) if record else "-" for m in summary.shown[:3]]
            lines.append("| " + " | ".join(cells) + " |")
    if summary.missing:
        lines.append("")
        lines.append(
            f"Not finished ({len(summary.missing)}): {', '.join(summary.missing[:10])}"
            f"{' ...' if len(summary.missing) > 10 else ''}"
        )
    return "\n".join(lines) + "\n"


def _seeds(seeds: list[int]) -> str:
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def run_rows(summary: Summary) -> list[dict[str, Any]]:
    rows = []
    for cell in summary.cells:
        for r in summary.records[cell.name]:
            row: dict[str, Any] = {
                "cell": cell.label,
                **{k: value_text(cell.values[k]) for k in summary.keys},
                "seed": r.seed,
            }
            row.update({m: r.metrics.get(m) for m in summary.metrics})
            row.update(
                {
                    "best_score": r.fit.get("best_score"),
                    "best_epoch": r.fit.get("best_epoch"),
                    "epochs": r.fit.get("epochs"),
                    "seconds_per_epoch": r.seconds_per_epoch,
                    "peak_memory_mb": r.peak_memory_mb,
                    "fit_wall_seconds": r.fit.get("wall_seconds"),
                }
            )
            if summary.train_metric:
                row[f"final_{summary.train_metric}"] = r.final_train(summary.train_metric)
            row["run_dir"] = str(r.run_dir)
            rows.append(row)
    return rows


def _csv(rows: list[dict[str, Any]]) -> str:
    fields: dict[str, None] = {}
    for row in rows:
        fields.update(dict.fromkeys(row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v) for k, v in row.items()}
        )
    return out.getvalue()


def write(summary: Summary, folder: Path) -> dict[str, Path]:
    """Write results.csv, runs.csv, results.md and results.json into ``folder``; their paths."""
    files = {"results.csv": _csv(summary.rows), "runs.csv": _csv(run_rows(summary)), "results.md": markdown(summary)}
    paths = {}
    for name, text in files.items():
        path = folder / name
        write_text_atomically(path, text)
        paths[name] = path
    write_json_atomically(
        folder / "results.json",
        {
            "metric": summary.metric,
            "baseline": summary.baseline.label if summary.baseline else None,
            "cells": summary.rows,
        },
    )
    paths["results.json"] = folder / "results.json"
    return paths
