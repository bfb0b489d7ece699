"""The atlas's tables: its CSV (one row per host and cell) rendered as docs/atlas.md, beside the papers.

The Markdown is a function of the CSV and the declaration alone (:func:`render`), so a test can say
whether docs/atlas.md is what its CSV gives (:func:`stale`).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Optional

from framework.runs import atomic_file
from tools.atlas_plan import Host, Plan

#: The CSV's columns, in order.
COLUMNS = (
    "budget",
    "domain",
    "host",
    "cell",
    "kind",
    "baseline",
    "n",
    "seeds",
    "metric",
    "mean",
    "std",
    "delta",
    "p",
    "seconds_per_epoch",
    "peak_memory_mb",
    "fit_seconds",
    "ablation_drop",
    "ablation_drop_std",
    "comprehensiveness",
    "comprehensiveness_std",
    "commit",
    "config_hash",
    "data_hash",
)
#: Significance marks of the paired t-test against the host's baseline.
MARKS = ((0.01, "**"), (0.05, "*"))


def write_csv(rows: list[dict[str, object]], path: Path) -> None:
    with atomic_file(path, "w", newline="") as out:  # the ledger: a kill leaves the previous one whole
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open())) if path.is_file() else []


def number(text: object) -> Optional[float]:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def fmt(text: object, digits: int = 3) -> str:
    value = number(text)
    return "-" if value is None else f"{value:.{digits}f}"


def signed(text: object, digits: int = 3) -> str:
    value = number(text)
    return "-" if value is None else f"{value:+.{digits}f}"


def difference(row: dict[str, str]) -> str:
    """The difference from the baseline, signed, with its mark of significance."""
    return f"{signed(row['delta'])} {mark(row)}".strip()


def pm(mean: object, std: object, digits: int = 3) -> str:
    if number(mean) is None:
        return "-"
    return fmt(mean, digits) + (f" ± {fmt(std, digits)}" if number(std) is not None else "")


def mark(row: dict[str, str]) -> str:
    """``**`` p < 0.01, ``*`` p < 0.05, on the side of the difference (``+``/``-``); '' otherwise."""
    p, delta = number(row.get("p")), number(row.get("delta"))
    if p is None or delta is None:
        return ""
    for level, stars in MARKS:
        if p < level:
            return ("+" if delta > 0 else "-") + stars
    return ""


def literature_of(host: Host, cell: str, metric: str) -> str:
    """The papers' figures of a cell, each with its metric where that is not the table's."""
    return "; ".join(
        f"{item.figure:g}{f' {item.metric}' if item.metric not in (None, metric) else ''} ({item.paper})"
        for item in host.literature
        if item.cell == cell
    )


def host_table(host: Host, rows: list[dict[str, str]]) -> list[str]:
    metric = rows[0]["metric"] if rows else "-"
    lines = [
        f"**{host.name}**: {host.task}. Host `{host.config}`, metric `{metric}`, baseline `{host.baseline.name}`.",
        "",
        "| cell | kind | n | metric, mean ± sd | Δ vs baseline | p (paired t) | s / epoch | peak MB | ablation drop "
        "(uniform) | ERASER comprehensiveness | paper | stamp: commit / config / data |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        stamp = " / ".join(row[k][:10] or "-" for k in ("commit", "config_hash", "data_hash"))
        lines.append(
            f"| {row['cell']}{' (baseline)' if row['baseline'] == 'True' else ''} | {row['kind']} | {row['n']} | "
            f"{pm(row['mean'], row['std'])} | {difference(row)} | {fmt(row['p'])} | "
            f"{fmt(row['seconds_per_epoch'], 2)} | {fmt(row['peak_memory_mb'], 0)} | "
            f"{pm(row['ablation_drop'], row['ablation_drop_std'])} | "
            f"{pm(row['comprehensiveness'], row['comprehensiveness_std'])} | "
            f"{literature_of(host, row['cell'], row['metric']) or '-'} | {stamp} |"
        )
    return lines


def best(rows: list[dict[str, str]]) -> Optional[dict[str, str]]:
    scored = [r for r in rows if number(r["mean"]) is not None]
    return max(scored, key=lambda r: number(r["mean"])) if scored else None


def minutes(rows: list[dict[str, str]]) -> Optional[float]:
    """The fits' wall time of a host, all cells and seeds (evaluations not counted), in minutes;
    None where a row measured elsewhere does not say it."""
    seconds = [number(row.get("fit_seconds")) for row in rows]
    known = [s for s in seconds if s is not None]
    return sum(known) / 60 if known and len(known) == len(seconds) else None


def summary(plan: Plan, hosts: list[Host], by_host: dict[str, list[dict[str, str]]]) -> list[str]:
    lines = [
        "| domain | host | metric | seeds | baseline | best cell (kind) | Δ best vs baseline | better than the "
        "baseline (p < 0.05) | worse (p < 0.05) | fit minutes |",
        "|---|---|---|---:|---:|---|---:|---|---|---:|",
    ]
    wins: dict[str, list[str]] = defaultdict(list)
    for host in hosts:
        rows = by_host.get(host.name, [])
        top = best(rows)
        if top is None:
            lines.append(f"| {host.domain} | {host.name} | - | 0 | not run yet | | | | | |")
            continue
        base = next((r for r in rows if r["baseline"] == "True"), None)
        better = [f"{r['cell']} {mark(r)}" for r in rows if mark(r).startswith("+")]
        worse = [f"{r['cell']} {mark(r)}" for r in rows if mark(r).startswith("-")]
        wins[top["kind"]].append(host.name)
        lines.append(
            f"| {host.domain} | {host.name} | {top['metric']} | {min(int(r['n']) for r in rows)} | "
            f"{pm(base['mean'], base['std']) if base else '-'} | "
            f"{top['cell']} ({top['kind']}) | {difference(top)} | {', '.join(better) or '-'} | "
            f"{', '.join(worse) or '-'} | {fmt(minutes(rows), 0)} |"
        )
    if wins:
        tally = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in sorted(wins.items()))
        lines += ["", f"Best cell by kind of block: {tally}.", "", total(hosts, by_host)]
    return lines


def total(hosts: list[Host], by_host: dict[str, list[dict[str, str]]]) -> str:
    """The sentence of the atlas's whole fit time: the hosts whose rows say theirs, and those that do not."""
    spent = {h.name: minutes(by_host[h.name]) for h in hosts if by_host.get(h.name)}
    timed = [m for m in spent.values() if m is not None]
    untimed = [name for name, m in spent.items() if m is None]
    unsaid = f"; {', '.join(untimed)} measured before fit times were kept, not counted" if untimed else ""
    hosts_said = f"{len(timed)} host{'' if len(timed) == 1 else 's'}"
    return f"Fit time of the atlas: {sum(timed):.0f} minutes ({sum(timed) / 60:.1f} hours) for {hosts_said}{unsaid}."


def literature(hosts: list[Host], by_host: dict[str, list[dict[str, str]]]) -> list[str]:
    lines = ["| host | cell | ours | paper's figure | paper | why they differ |", "|---|---|---:|---:|---|---|"]
    for host in hosts:
        rows = {r["cell"]: r for r in by_host.get(host.name, [])}
        for item in host.literature:
            ours = rows.get(item.cell)
            same = ours is not None and (item.metric is None or item.metric == ours["metric"])
            lines.append(
                f"| {host.name} | {item.cell} | {pm(ours['mean'], ours['std']) if same else '-'} | {item.figure:g} | "
                f"{item.paper} | {item.note} |"
            )
    return lines


def render(plan: Plan, budget: str, rows: list[dict[str, str]]) -> str:
    """docs/atlas.md from the CSV's ``rows`` and the declaration."""
    hosts = list(plan.of(budget))
    by_host: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        by_host[row["host"]].append(row)
    command = "python -m tools.atlas" + (" --quick" if budget == "quick" else "")
    lines = [
        "# An atlas of attention: which block for which task",
        "",
        f"Written by `{command}` from `atlas.csv` and `tools/atlas.yaml`; not edited by hand (a test checks that "
        "it is what the CSV gives). Each cell is a block in a host model, run over seeds through `compare`: the "
        "test metric as mean ± sample sd, a paired t-test against the host's no-attention baseline over common "
        "seeds (marks: `+*`/`-*` p < 0.05, `+**`/`-**` p < 0.01, on the side of the difference), time per "
        "training epoch and peak memory, and two of `evaluate`'s measures that the benchmark of the measures "
        "found trustworthy: the drop of the test metric when every block's weights are made uniform, and ERASER's "
        "AOPC comprehensiveness where a decision rests on items. Each run's stamp: the code commit, the resolved "
        "config's hash and the data's content hash (generated data: none; see framework/provenance.py). Fit "
        "minutes: the wall time of a host's fits, every cell and seed (evaluations not counted), on the machine "
        "that ran them (here 2 CPU cores, two single-threaded runs at a time).",
        "",
        "## Summary across domains",
        "",
        *summary(plan, hosts, by_host),
        "",
    ]
    for domain in dict.fromkeys(host.domain for host in hosts):
        lines += [f"## {domain}", ""]
        for host in hosts:
            if host.domain == domain:
                lines += [*host_table(host, by_host.get(host.name, [])), ""]
    lines += ["## Beside the literature", "", *literature(hosts, by_host), ""]
    return "\n".join(lines)


#: The README's lines around the atlas's summary (:func:`in_readme`), which the atlas writes.
README_MARKS = (
    "<!-- the atlas's summary, written by python -m tools.atlas: -->",
    "<!-- end of the atlas's summary -->",
)


def in_readme(readme: str, plan: Plan, rows: list[dict[str, str]]) -> str:
    """``readme`` with the summary across domains of the full atlas (``rows``) between its marks."""
    start, end = README_MARKS
    if readme.count(start) != 1 or readme.count(end) != 1:
        raise ValueError(f"the README needs the lines {start!r} and {end!r} once each, the summary between them")
    by_host: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        by_host[row["host"]].append(row)
    block = "\n".join([start, "", *summary(plan, list(plan.of("full")), by_host), "", end])
    before, rest = readme.split(start)
    return before + block + rest.split(end)[1]


def stale(plan: Plan, budget: str, csv_path: Path, md_path: Path, readme: Optional[Path] = None) -> bool:
    """Whether ``md_path`` (and the summary in ``readme``) differs from what ``csv_path`` and the declaration give."""
    rows = read_csv(csv_path)
    if not md_path.is_file() or md_path.read_text() != render(plan, budget, rows):
        return True
    return readme is not None and readme.read_text() != in_readme(readme.read_text(), plan, rows)
