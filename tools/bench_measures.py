"""Benchmark of the measures: which faithfulness and plausibility measures order models by their true faithfulness?

    python -m tools.bench_measures --quick             # smaller fits and evaluations, 3 seeds: all five domains
                                                       #   in about 1 h on 2 CPU cores
    python -m tools.bench_measures                     # the full setting: 5 seeds, larger fits (hours on 2 CPU cores)
    python -m tools.bench_measures --domains recall --seeds 3 --jobs 2
    python -m tools.bench_measures --report            # only the tables of what has finished

On tasks whose evidence is known by construction, four families of models whose faithfulness
is known by construction are trained (:mod:`framework.tasks.attention_training`), in this order
of true faithfulness:

1. ``supervised``: attention trained towards the gold evidence (``task.attention_supervision=1``);
2. ``plain``: trained on the task alone;
3. ``decoupled``: trained on the task while its attention's mass on the gold evidence is pushed
   to 0 (``task.decouple_attention=1``): a model that still decides right reads the evidence
   some other way, and its attention is not what its decision rests on;
4. ``random``: every attention block's weights drawn at random in training and at test
   (``task.random_attention=true``).

Domains (``--domains``): ``recall``, the demo's associative recall (the queried pair is the gold;
the 2-layer SequenceClassifier); ``babi1``, bAbI task 1 with MemN2N (the supporting fact;
``memn2n_babi.yaml``); ``dates``, date normalisation with Luong attention (an output character's
gold alignment: its sure links, or the field it comes from; ``seq2seq_luong.yaml``);
``scenes``, digit scenes segmented by a non-local head (a tile's pixels look at the drawn digit;
``nonlocal.yaml`` at 32 x 32, ``data.gold=true``); ``han``, HAN on generated authors (the last
layer's semantic attention against the planted meta-path APA; ``han.yaml``, two layers, see
:data:`HAN`). Each domain is one ``python -m framework compare`` grid over the families' task
options (``--grid config=[<family presets>]``, ``--seeds``; runs under
``runs/compare/bench_measures_<setting>_<domain>/``, resumed by the same command), then
``evaluate`` of every run's best checkpoint with the measures' tests (the table in
``runs/bench_measures/<setting>/<domain>/<family>/seed<S>/evaluation.csv``, not redone once
written).

For every measure (oriented so that higher means "more faithful": sufficiency, infidelity and
sensitivity are negated), how well its values over the runs follow the families' order (4 =
supervised ... 1 = random, tied within a family): Somers' D, the Kendall-type rank correlation
given that order (the share of pairs of runs from different families that the measure orders
rightly, less the share it orders wrongly), with a 95 % percentile bootstrap interval over
seeds (each family's runs resampled with replacement); and Spearman's rho, whose ties within a
family cap it below 1 (0.97 with 3 seeds, the table's first row). D near 1: the measure
recovers the truth on that domain; near 0: it cannot tell the families apart; below 0: it
orders them the wrong way round. The tables go to
``runs/bench_measures/<setting>/measures.md`` (and ``measures.csv``), printed too.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from framework.runs import atomic_file, write_text_atomically

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]

#: The families, most faithful first, and the task options that make them.
FAMILIES = {
    "supervised": {"attention_supervision": 1.0},
    "plain": {},
    "decoupled": {"decouple_attention": 1.0},
    "random": {"random_attention": True},
}


class Domain(NamedTuple):
    title: str
    config: str
    task: str  # the task's class path (the family presets name it)
    full: list[str]  # fit flags of the full setting
    quick: list[str]  # fit flags of the quick setting


#: The digit scenes at CPU size (both settings): 32 x 32, one drawn digit and one tile of 12-16 px, no clutter, a
#: half-width ResNet-18; every split's batches carry the gold masks (the supervised and decoupled families train
#: on them).
SCENES = [
    "--data.gold=true",
    "--data.canvas_size=32",
    "--data.digits_per_scene=2",
    "--data.digit_size=[12,16]",
    "--data.clutter=0",
    "--data.noise=0",
    "--data.batch_size=16",
    "--optimizer.init_args.lr=0.005",
    "--model.channels=[16,32,64,128]",
    "--model.stem_width=16",
]

#: The planted authors for HAN (both settings): 240 authors, 120 of them training; 5 seats per paper (co-authors along
#: APA, the gold meta-path, about 20 per author); 600 venues of one author each on average, so that AVA is about the
#: author itself. HAN of two layers without attention dropout (AVA's one neighbour would be dropped), Adam 0.01: the
#: decoupled family gathers the co-authors in the first layer and reads them in the second through AVA (its own vector).
HAN = [
    "--data.num_authors=240",
    "--data.num_papers=240",
    "--data.authors_per_paper=5",
    "--data.num_venues=600",
    "--data.venues_per_author=1",
    "--data.train_per_class=40",
    "--model.num_layers=2",
    "--model.attention_dropout=0",
    "--optimizer.init_args.lr=0.01",
]

DOMAINS = {
    "recall": Domain(
        "associative recall (SequenceClassifier)",
        "domains/demo/demo.yaml",
        "domains.demo.SequenceClassification",
        ["--trainer.max_epochs=6", "--data.train_size=4000", "--data.val_size=500", "--data.test_size=500"],
        ["--trainer.max_epochs=4", "--data.train_size=3000", "--data.val_size=300", "--data.test_size=300"],
    ),
    "babi1": Domain(
        "bAbI task 1 (MemN2N)",
        "domains/memory/memn2n_babi.yaml",
        "domains.memory.QuestionAnswering",
        [],
        ["--trainer.max_epochs=40"],
    ),
    "dates": Domain(
        "dates -> ISO (Luong seq2seq)",
        "domains/nlp/seq2seq_luong.yaml",
        "domains.nlp.Translation",
        [
            "--model.dim=64",
            "--trainer.max_epochs=8",
            "--data.train_size=8000",
            "--data.val_size=500",
            "--data.test_size=500",
        ],
        [
            "--model.dim=64",
            "--trainer.max_epochs=8",
            "--data.train_size=4000",
            "--data.val_size=200",
            "--data.test_size=200",
        ],
    ),
    "scenes": Domain(
        "digit scenes (non-local segmentation)",
        "domains/vision/nonlocal.yaml",
        "domains.vision.Segmentation",
        [
            *SCENES,
            "--data.train_size=4000",
            "--data.val_size=200",
            "--data.test_size=200",
            "--trainer.max_epochs=8",
            "--lr_scheduler.init_args.T_max=8",
        ],
        [
            *SCENES,
            "--data.train_size=2000",
            "--data.val_size=100",
            "--data.test_size=100",
            "--trainer.max_epochs=6",
            "--lr_scheduler.init_args.T_max=6",
        ],
    ),
    "han": Domain(
        "planted HAN meta-paths (HAN)",
        "domains/graph/han.yaml",
        "domains.graph.HeteroNodeClassification",
        [*HAN, "--trainer.max_epochs=150"],
        [*HAN, "--trainer.max_epochs=100"],
    ),
}


class Setting(NamedTuple):
    name: str
    seeds: int
    examples: int  # test examples of each evaluation
    evaluate: list[str]  # the tests of every evaluation, and their sizes


TESTS = "--tests=[ablation, faithfulness, intrinsic, eraser, plausibility, infidelity, sensitivity]"
SETTINGS = {
    "full": Setting(
        "full",
        5,
        256,
        [TESTS, "--ablation_modes=[uniform]", "--permutations=10", "--attribution_steps=16", "--perturb_samples=10"],
    ),
    "quick": Setting(
        "quick",
        3,
        64,
        [TESTS, "--ablation_modes=[uniform]", "--permutations=3", "--attribution_steps=4", "--perturb_samples=3"],
    ),
}


def runs_root() -> Path:
    return Path(os.environ.get("FRAMEWORK_RUNS_DIR", ROOT / "runs"))


def results(setting: Setting) -> Path:
    """The benchmark's own folder of a setting: family presets, evaluation tables, measures.md."""
    return runs_root() / "bench_measures" / setting.name


def environment(threads: int) -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "WANDB_MODE": "disabled"}
    env.setdefault("FRAMEWORK_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    return env


def presets(domain: str, setting: Setting) -> list[Path]:
    """The family presets of a domain (``task: class_path, init_args``), written beside the results."""
    folder = results(setting) / "families" / domain
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for family, options in FAMILIES.items():
        lines = ["task:", f"  class_path: {DOMAINS[domain].task}"]
        if options:
            lines += ["  init_args:"] + [
                f"    {key}: {str(value).lower() if isinstance(value, bool) else value}"
                for key, value in options.items()
            ]
        path = folder / f"{family}.yaml"
        write_text_atomically(path, "\n".join(lines) + "\n")
        paths.append(path)
    return paths


def compare_name(domain: str, setting: Setting) -> str:
    return f"bench_measures_{setting.name}_{domain}"


def train(domain: str, setting: Setting, args: argparse.Namespace) -> None:
    """The domain's ``compare`` grid (resumed where it stopped)."""
    spec = DOMAINS[domain]
    grid = "config=[" + ",".join(str(p) for p in presets(domain, setting)) + "]"
    command = [
        sys.executable,
        "-m",
        "framework",
        "compare",
        "--config",
        spec.config,
        "--config",
        "configs/logger/csv.yaml",
        "--grid",
        grid,
        "--seeds",
        str(args.seeds),
        "--jobs",
        str(args.jobs),
        "--name",
        compare_name(domain, setting),
        "--status_every",
        "120",
        *(spec.quick if setting.name == "quick" else spec.full),
    ]
    print(f"[{time.strftime('%H:%M:%S')}] {' '.join(command[2:])}", flush=True)
    done = subprocess.run(command, cwd=ROOT, env=environment(1))
    if done.returncode:
        raise SystemExit(f"compare of {domain} failed (status {done.returncode})")


def run_folder(domain: str, setting: Setting, family: str, seed: int) -> Path:
    return runs_root() / "compare" / compare_name(domain, setting) / "runs" / f"config={family}" / f"seed{seed}"


def table_of(domain: str, setting: Setting, family: str, seed: int) -> Path:
    return results(setting) / domain / family / f"seed{seed}" / "evaluation.csv"


def evaluate(domain: str, setting: Setting, family: str, seed: int, args: argparse.Namespace) -> Optional[str]:
    """``evaluate`` of one run's best checkpoint (unless its table exists); an error line or None."""
    table, run = table_of(domain, setting, family, seed), run_folder(domain, setting, family, seed)
    if table.is_file():
        return None
    checkpoint = run / "checkpoints" / "best.ckpt"
    if not checkpoint.is_file():
        return f"{domain} {family} seed {seed}: no checkpoint at {checkpoint}"
    table.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "framework",
        "evaluate",
        "--config",
        str(run / "config.yaml"),
        "--ckpt_path",
        str(checkpoint),
        *QUIET,
        "--trainer.logger=false",
        f"--examples={args.examples}",
        *setting.evaluate,
        "--run_dir",
        str(table.parent / "run"),
    ]
    start = time.time()
    with (table.parent / "evaluate.log").open("w") as log:
        done = subprocess.run(command, cwd=ROOT, env=environment(args.threads), stdout=log, stderr=subprocess.STDOUT)
    if done.returncode:
        return (
            f"{domain} {family} seed {seed}: evaluate failed (status {done.returncode}); "
            f"see {table.parent / 'evaluate.log'}"
        )
    (table.parent / "run" / "evaluation.csv").replace(table)
    print(
        f"[{time.strftime('%H:%M:%S')}] evaluated {domain} {family} seed {seed} in {time.time() - start:.0f} s",
        flush=True,
    )
    return None


# ------------------------------------------------------------------ the measures, read off a table

Rows = list[dict[str, str]]


def number(text: Optional[str]) -> Optional[float]:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def value_of(**where: str) -> Callable[[Rows], Optional[float]]:
    """The value of the first row whose columns start with the given texts."""

    def read(rows: Rows) -> Optional[float]:
        row = next((r for r in rows if all(r[k].startswith(v) for k, v in where.items())), None)
        return number(row["value"]) if row else None

    return read


def ablation_drop(rows: Rows) -> Optional[float]:
    """The test metric's fall under uniform weights in every block (``all``, or the one block)."""
    found = [
        r for r in rows if r["test"] == "ablation" and r["setting"] == "uniform" and number(r["value"]) is not None
    ]
    row = next((r for r in found if r["block"] == "all"), found[0] if len(found) == 1 else None)
    return None if row is None else number(row["baseline"]) - number(row["value"])


def correctness(rows: Rows) -> Optional[float]:
    """Attention correctness, averaged over the views (hops) of all examples."""
    values = [
        number(r["value"])
        for r in rows
        if r["test"] == "intrinsic" and r["measure"] == "attention correctness" and r["setting"] == "all"
    ]
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


class Measure(NamedTuple):
    name: str
    read: Callable[[Rows], Optional[float]]
    sign: int  # +1: higher is more faithful; -1: lower is


MEASURES = [
    Measure("ablation: test metric drop, uniform weights", ablation_drop, +1),
    Measure("permutation: median output TVD", value_of(test="permutation", measure="median output TVD"), +1),
    Measure("erasure: top-1 decision flips", value_of(test="erasure", measure="decision flips"), +1),
    Measure("Kendall tau vs gradient x input", value_of(test="attribution", setting="gradient_x_input"), +1),
    Measure("Kendall tau vs integrated gradients", value_of(test="attribution", setting="integrated_gradients"), +1),
    Measure("Kendall tau vs leave-one-out", value_of(test="attribution", setting="leave_one_out"), +1),
    Measure("ERASER AOPC comprehensiveness", value_of(test="eraser", measure="AOPC comprehensiveness"), +1),
    Measure("ERASER AOPC sufficiency (lower)", value_of(test="eraser", measure="AOPC sufficiency"), -1),
    Measure("Captum infidelity (lower)", value_of(test="infidelity", setting="attention,"), -1),
    Measure("Captum max-sensitivity (lower)", value_of(test="sensitivity", setting="attention,"), -1),
    Measure("attention correctness (gold mass)", correctness, +1),
    Measure("plausibility: token F1", value_of(test="plausibility", setting="attention,", measure="token F1"), +1),
    Measure("plausibility: AUPRC", value_of(test="plausibility", setting="attention,", measure="AUPRC"), +1),
]


def oriented(rows: Rows) -> dict[str, Optional[float]]:
    """Every measure of one evaluation table, signed so that higher means more faithful (None: absent)."""
    found = {}
    for measure in MEASURES:
        value = measure.read(rows) if rows else None
        found[measure.name] = None if value is None else measure.sign * value
    return found


# ------------------------------------------------------------------ how well a measure orders the families


def rank_correlations(values: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman's rho and Somers' D of every row of ``values`` (..., n) given ``truth`` (n,).

    rho = sum_i a_i b_i / sqrt(sum_i a_i^2 sum_i b_i^2), a and b the centred (average, for ties)
    ranks. D = sum_{i,j} s_ij t_ij / sum_{i,j} |t_ij|, s_ij = sign(x_i - x_j), t_ij = sign(y_i - y_j):
    Kendall's tau over the pairs of runs the truth orders (runs of different families), the share
    of those pairs a measure orders rightly less the share it orders wrongly. NaN where the
    values are all equal (rho) or the truth orders no pair (D). An infinite value (Captum's
    infidelity of a degenerate run) ranks beyond every finite one and ties with its equal."""
    from scipy.stats import rankdata

    values = np.asarray(values, dtype=float)
    ranks = rankdata(values, axis=-1)
    a = ranks - ranks.mean(-1, keepdims=True)
    b = rankdata(truth) - rankdata(truth).mean()
    before, after = values[..., :, None], values[..., None, :]
    s = (before > after).astype(float) - (before < after)  # not sign(x_i - x_j): inf - inf is no order
    t = np.sign(np.subtract.outer(truth, truth).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum())
        d = (s * t).sum((-2, -1)) / np.abs(t).sum()
    return rho, d


def order_of(found: dict[str, list[Optional[float]]]) -> Optional[tuple[dict[str, np.ndarray], np.ndarray]]:
    """Each family's values (None dropped) and the true order of the runs (4 = supervised ...
    1 = random, one entry per run, families in :data:`FAMILIES` order); None when a family has none."""
    present = {
        family: np.array([v for v in found.get(family, []) if v is not None], dtype=float) for family in FAMILIES
    }
    if any(len(values) == 0 for values in present.values()):
        return None
    truth = np.concatenate([np.full(len(present[family]), len(FAMILIES) - k) for k, family in enumerate(FAMILIES)])
    return present, truth


def bootstrap(found: dict[str, list[Optional[float]]], draws: int, seed: int = 0) -> np.ndarray:
    """Somers' D of ``draws`` bootstrap samples (each family's runs drawn with replacement, as
    many as it has); empty when a family has no value. A run drawn twice ties with itself
    within its family, a pair D leaves out (rho would count it: its resamples run high)."""
    ordered = order_of(found)
    if ordered is None:
        return np.empty(0)
    present, truth = ordered
    rng = np.random.default_rng(seed)
    sample = np.concatenate(
        [values[rng.integers(0, len(values), (draws, len(values)))] for values in present.values()], axis=1
    )
    return rank_correlations(sample, truth)[1]


def interval(drawn: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the bootstrap draws (those that are not NaN)."""
    drawn = drawn[~np.isnan(drawn)]
    if not len(drawn):
        return math.nan, math.nan
    low, high = np.percentile(drawn, [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def ceiling(seeds: int) -> float:
    """The highest Spearman's rho that distinct values reach with ``seeds`` runs per family, the
    truth being tied within a family (0.97 with 3 runs per family; Somers' D reaches 1)."""
    truth = np.repeat(np.arange(len(FAMILIES), 0, -1), seeds)
    return float(rank_correlations(-np.arange(len(truth), dtype=float), truth)[0])


class Agreement(NamedTuple):
    """How a measure orders the runs against their true faithfulness."""

    d: float
    d_interval: tuple[float, float]
    rho: float
    runs: int


def agreement(found: dict[str, list[Optional[float]]], draws: int = 2000, seed: int = 0) -> Agreement:
    """Somers' D of the runs' values given the families' order, with its 95 % bootstrap interval
    over seeds, and Spearman's rho; NaN where a family has no value or the values are all equal."""
    ordered = order_of(found)
    runs = sum(v is not None for values in found.values() for v in values)
    if ordered is None:
        return Agreement(math.nan, (math.nan, math.nan), math.nan, runs)
    present, truth = ordered
    rho, d = rank_correlations(np.concatenate(list(present.values())), truth)
    return Agreement(float(d), interval(bootstrap(found, draws, seed)), float(rho), runs)


# ------------------------------------------------------------------ the tables


def collect(domain: str, setting: Setting, seeds: int) -> dict[str, dict[str, list[Optional[float]]]]:
    """measure -> family -> oriented value per seed (None: no table or no value); '__metric' the test metric."""
    found: dict[str, dict[str, list[Optional[float]]]] = {}
    for family in FAMILIES:
        for seed in range(seeds):
            path = table_of(domain, setting, family, seed)
            rows: Rows = list(csv.DictReader(path.open(newline=""))) if path.is_file() else []
            metric = next((number(r["value"]) for r in rows if r["test"] == "test"), None)
            found.setdefault("__metric", {}).setdefault(family, []).append(metric)
            for name, value in oriented(rows).items():
                found.setdefault(name, {}).setdefault(family, []).append(value)
    return found


def fmt(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:+.{digits}f}"


def cell(value: float, bounds: tuple[float, float]) -> str:
    return "-" if math.isnan(value) else f"{fmt(value)} [{fmt(bounds[0])}, {fmt(bounds[1])}]"


def mean_sd(values: list[Optional[float]]) -> str:
    """Mean ± sd of the values; where some are infinite, the finite ones' and how many are not."""
    present = [v for v in values if v is not None]
    finite = [v for v in present if math.isfinite(v)]
    infinite = f" ({len(present) - len(finite)} of {len(present)} infinite)" if len(finite) < len(present) else ""
    if not finite:
        return "-" if not present else f"inf{infinite}"
    spread = f" ± {np.std(finite, ddof=1):.3f}" if len(finite) > 1 else ""
    return f"{np.mean(finite):.3f}{spread}{infinite}"


def report(domains: list[str], setting: Setting, seeds: int, draws: int) -> str:
    """The markdown tables: Somers' D [95 % interval] and rho per measure and domain; each family's figures."""
    collected = {domain: collect(domain, setting, seeds) for domain in domains}
    header = "| measure | " + " | ".join(f"{DOMAINS[d].title}: D [95 % CI] | ρ" for d in domains) + " |"
    lines = [
        header,
        "|---|" + "---:|---:|" * len(domains),
        "| (the best order reaches) | " + " | ".join(f"+1.00 | {fmt(ceiling(seeds))}" for _ in domains) + " |",
    ]
    csv_rows = []
    for measure in MEASURES:
        cells = []
        for domain in domains:
            found = agreement(collected[domain][measure.name], draws)
            cells += [cell(found.d, found.d_interval), fmt(found.rho)]
            csv_rows.append([measure.name, domain, found.d, *found.d_interval, found.rho, found.runs])
        lines.append(f"| {measure.name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| domain | family | test metric | gold mass | AOPC comprehensiveness | infidelity |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for domain in domains:
        found = collected[domain]
        for family in FAMILIES:
            infidelity = [None if v is None else -v for v in found["Captum infidelity (lower)"][family]]
            lines.append(
                f"| {DOMAINS[domain].title} | {family} | {mean_sd(found['__metric'][family])} | "
                f"{mean_sd(found['attention correctness (gold mass)'][family])} | "
                f"{mean_sd(found['ERASER AOPC comprehensiveness'][family])} | {mean_sd(infidelity)} |"
            )
    folder = results(setting)
    with atomic_file(folder / "measures.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["measure", "domain", "somers_d", "low", "high", "spearman", "runs"])
        writer.writerows(csv_rows)
    text = "\n".join(lines)
    write_text_atomically(folder / "measures.md", text + "\n")
    return text


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_measures", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="the quick setting: smaller fits and evaluations, 3 seeds")
    parser.add_argument("--domains", nargs="+", choices=list(DOMAINS), default=list(DOMAINS))
    parser.add_argument("--seeds", type=int, help="runs per family, seeds 0 .. N-1 (default 5; quick 3)")
    parser.add_argument("--jobs", type=int, default=2, help="runs (compare) and evaluations at once")
    parser.add_argument("--threads", type=int, default=1, help="threads of each evaluation")
    parser.add_argument("--examples", type=int, help="test examples of each evaluation (default 256; quick 64)")
    parser.add_argument("--draws", type=int, default=2000, help="bootstrap draws of each interval")
    parser.add_argument("--report", action="store_true", help="only the tables of what has finished")
    args = parser.parse_args(argv)
    setting = SETTINGS["quick" if args.quick else "full"]
    args.seeds = args.seeds or setting.seeds
    args.examples = args.examples or setting.examples
    if args.seeds < 3:
        parser.error(f"--seeds: the intervals need at least 3 runs per family, got {args.seeds}")
    start = time.time()
    if not args.report:
        for domain in args.domains:
            train(domain, setting, args)
            jobs = [(domain, setting, family, seed) for family in FAMILIES for seed in range(args.seeds)]
            with ThreadPoolExecutor(args.jobs) as pool:
                errors = [e for e in pool.map(lambda job: evaluate(*job, args), jobs) if e]
            for error in errors:
                print(error, flush=True)
        print(f"\n{time.time() - start:.0f} s in all", flush=True)
    print("\n" + report(args.domains, setting, args.seeds, args.draws))
    print(f"\ntables: {results(setting) / 'measures.md'}, {results(setting) / 'measures.csv'}")


if __name__ == "__main__":
    main()
