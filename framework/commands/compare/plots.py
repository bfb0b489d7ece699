"""Pictures of a comparison (figures of :mod:`framework.pictures`, PNG in the comparison folder),
and their logging to W&B: one run named ``<name>/comparison`` in the comparison's group, offline without
an API key as every run of the framework's WandbLogger."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

from ...pictures import caption, figure
from ...runs import atomic_file
from .results import Summary

MAX_PANELS = 4


def metric_figure(summary: Summary) -> Any:
    """The shown test metrics against the cell: each seed a dot, the mean with a +- std bar;
    None without test metrics."""
    metrics = summary.shown[:MAX_PANELS]
    if not metrics:
        return None
    width = max(4.0, 0.9 * len(summary.cells) + 1.5)
    fig = figure(width * len(metrics), 3.6)
    axes = fig.subplots(1, len(metrics), squeeze=False)
    labels = [c.label for c in summary.cells]
    for ax, metric in zip(axes[0], metrics):
        for x, cell in enumerate(summary.cells):
            values = [r.metrics[metric] for r in summary.records[cell.name] if metric in r.metrics]
            if not values:
                continue
            ax.scatter([x] * len(values), values, s=14, alpha=0.5, color="tab:blue", zorder=2)
            mean = sum(values) / len(values)
            std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0
            ax.errorbar([x + 0.15], [mean], yerr=[std], fmt="o", color="tab:red", capsize=4, zorder=3)
        ax.set_xticks(
            range(len(labels)),
            labels,
            rotation=30 if len(labels) > 3 else 0,
            ha="right" if len(labels) > 3 else "center",
        )
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.set_xlabel("cell")
        ax.set_ylabel(metric)
        ax.set_title(metric)
        ax.grid(axis="y", alpha=0.3)
    caption(fig, f"{summary.name}: seeds (dots), mean ± std (red)")
    return fig


def metric_plot(summary: Summary, path: Path) -> Optional[Path]:
    """:func:`metric_figure` written to ``path``; None (nothing written) without test metrics."""
    return _write(metric_figure(summary), path)


def _curve(records, key: str, history: str) -> tuple[list[int], list[float], list[float]]:
    by_epoch: dict[int, list[float]] = {}
    for record in records:
        for entry in record.fit.get(history) or []:
            if key in entry and entry[key] is not None and not math.isnan(entry[key]):
                by_epoch.setdefault(int(entry["epoch"]), []).append(entry[key])
    epochs = sorted(by_epoch)
    means = [sum(by_epoch[e]) / len(by_epoch[e]) for e in epochs]
    stds = [
        (sum((v - m) ** 2 for v in by_epoch[e]) / (len(by_epoch[e]) - 1)) ** 0.5 if len(by_epoch[e]) > 1 else 0.0
        for e, m in zip(epochs, means)
    ]
    return epochs, means, stds


def curves_figure(summary: Summary) -> Any:
    """Learning curves per cell: the validation metric the checkpoints follow, validation and
    training loss, against the epoch; mean over seeds (a dot per epoch, so that one epoch
    shows), shaded +- std. None without histories."""
    panels = [
        (k, h) for k, h in ((summary.monitor, "history"), ("val/loss", "history"), ("train/loss", "train_history")) if k
    ]
    panels = list(dict.fromkeys(panels))
    records = [r for rs in summary.records.values() for r in rs]
    panels = [(k, h) for k, h in panels if any(k in e for r in records for e in r.fit.get(h) or [])]
    if not panels:
        return None
    import matplotlib
    from matplotlib.ticker import MaxNLocator

    fig = figure(5.0 * len(panels), 3.6)
    axes = fig.subplots(1, len(panels), squeeze=False)
    colors = matplotlib.colormaps["tab10"]
    for ax, (key, history) in zip(axes[0], panels):
        last = 1
        for i, cell in enumerate(summary.cells):
            epochs, means, stds = _curve(summary.records[cell.name], key, history)
            if not epochs:
                continue
            xs = [e + 1 for e in epochs]
            last = max(last, xs[-1])
            ax.plot(xs, means, label=cell.label, color=colors(i % 10), marker="o", markersize=4)  # one epoch: a dot
            ax.fill_between(
                xs,
                [m - s for m, s in zip(means, stds)],
                [m + s for m, s in zip(means, stds)],
                color=colors(i % 10),
                alpha=0.15,
            )
        ax.set_xlabel("epoch")
        ax.set_xlim(0.5, last + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.set_ylabel(key)
        ax.set_title(key)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    caption(fig, f"{summary.name}: learning curves (mean over seeds ± std)")
    return fig


def curves_plot(summary: Summary, path: Path) -> Optional[Path]:
    """:func:`curves_figure` written to ``path``; None (nothing written) without histories."""
    return _write(curves_figure(summary), path)


def _write(fig: Any, path: Path) -> Optional[Path]:
    if fig is None:
        return None
    with atomic_file(path) as file:
        fig.savefig(file, format=path.suffix.lstrip("."))
    return path


def plot(summary: Summary, folder: Path) -> list[Path]:
    """Write ``metric.png`` and ``curves.png`` into ``folder``; the paths written."""
    made = [metric_plot(summary, folder / "metric.png"), curves_plot(summary, folder / "curves.png")]
    return [p for p in made if p is not None]


def log_to_wandb(
    summary: Summary, folder: Path, project: str, group: str, images: list[Path], results_csv: Path
) -> Optional[str]:
    """Log the pictures and the table as one W&B run of the comparison's group; where it went."""
    import csv

    import wandb

    from ...loggers import WandbLogger

    logger = WandbLogger(
        name=f"{group}/comparison",
        save_dir=str(folder),
        project=project,
        group=group,
        job_type="compare",
        id=f"compare-{group}"[-64:],
    )
    run = logger.experiment
    rows = list(csv.DictReader(results_csv.open()))
    payload = {f"compare/{p.stem}": wandb.Image(str(p)) for p in images}
    if rows:
        payload["compare/results"] = wandb.Table(columns=list(rows[0]), data=[list(r.values()) for r in rows])
    for cell, row in zip(summary.cells, summary.rows):
        run.summary[f"{cell.label}/n"] = row["n"]
        if summary.metric:
            run.summary[f"{cell.label}/{summary.metric}_mean"] = row.get(f"{summary.metric}_mean")
    run.log(payload)
    where = getattr(run, "dir", None) or str(folder / "wandb")
    logger.finalize("success")
    return where
