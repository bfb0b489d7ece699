"""NLP benchmark through ``python -m framework compare``: TREC classifiers over seeds, and
sequence-to-sequence models trained for a fixed CPU-time budget.

    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_nlp --parts trec            # 3 seeds x 3 classifiers
    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_nlp --parts dates multi30k --minutes 1

Three tables:

* trec: test accuracy and macro F1 on TREC-6 of the self-attentive, HAN and Transformer
  classifiers (domains/nlp/*_trec.yaml as they are: their epochs, the best val/acc checkpoint
  tested), mean ± sd over ``--seeds`` seeds, with a paired t-test against the self-attentive model.
* dates: test exact match on date normalisation (generated, 1000 test dates) of the Bahdanau,
  Luong and no-attention recurrent decoders (domains/nlp/seq2seq_*.yaml; the no-attention one is
  the Bahdanau config with ``model.attention=none``), greedy decoding.
* multi30k: test BLEU (sacreBLEU 13a, test_2016_flickr, greedy) of the same three and the
  Transformer (domains/nlp/*_multi30k.yaml), made CPU-sized alike by one preset
  (domains/nlp/presets/multi30k_cpu.yaml: joint BPE of 4000 tokens, width 128, batches of 32,
  sequences of at most 40 tokens).

The protocol specific to dates and multi30k: every run trains for a fixed budget
(``--trainer.max_time``, validation off, so the budget goes to training) and its last weights
are tested (``--test_ckpt last``); one comparison per config (the rows differ in more than one
key), under runs/compare/bench_nlp_<part>_<config>/.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from framework.commands.compare import main as compare

QUIET = [
    "--config",
    "configs/logger/csv.yaml",
    "--trainer.enable_model_summary=false",
    "--attention_maps.every_n_epochs=0",
]
BUDGET = ["--trainer.limit_val_batches=0", "--trainer.num_sanity_val_steps=0", "--test_ckpt", "last"]
MULTI30K_CPU = ["--config", "domains/nlp/presets/multi30k_cpu.yaml"]
#: part -> comparisons: (name, config, grid flags, extra flags); rows are the comparisons' cells.
PARTS = {
    "trec": [
        (
            "trec",
            None,
            [
                "config=[domains/nlp/selfattentive_trec.yaml,domains/nlp/han_trec.yaml,"
                "domains/nlp/transformer_cls_trec.yaml]"
            ],
            [],
        )
    ],
    "dates": [
        ("dates_bahdanau", "seq2seq_bahdanau", ["model.attention=[additive,none]"], BUDGET),
        ("dates_luong", "seq2seq_luong", [], BUDGET),
    ],
    "multi30k": [
        (
            "multi30k_bahdanau",
            "seq2seq_bahdanau_multi30k",
            ["model.attention=[additive,none]"],
            [*BUDGET, *MULTI30K_CPU, "--model.embed_dim=64"],
        ),
        ("multi30k_luong", "seq2seq_luong_multi30k", [], [*BUDGET, *MULTI30K_CPU, "--model.embed_dim=64"]),
        ("multi30k_transformer", "transformer_mt_multi30k", [], [*BUDGET, *MULTI30K_CPU, "--model.depth=2"]),
    ],
}
METRIC = {"trec": "test/acc", "dates": "test/exact", "multi30k": "test/bleu"}
MINUTES = {"dates": 1.5, "multi30k": 3.0}


def compare_args(
    name: str, config: str | None, grid: list[str], extra: list[str], part: str, args: argparse.Namespace
) -> list[str]:
    flags = ["--name", f"bench_nlp_{name}", "--jobs", str(args.jobs), "--metric", METRIC[part]]
    if config:
        flags += ["--config", f"domains/nlp/{config}.yaml"]
    for axis in grid:
        flags += ["--grid", axis]
    if part == "trec":
        flags += ["--seeds", str(args.seeds), "--metrics", "test/acc", "test/f1"]
    else:
        minutes = args.minutes or MINUTES[part]
        budget = time.strftime("%H:%M:%S", time.gmtime(round(minutes * 60)))
        flags += ["--seeds", str(args.budget_seeds), f"--trainer.max_time=00:{budget}", "--metrics", METRIC[part]]
    return [*flags, *QUIET, *extra, *(["--report"] if args.report else [])]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_nlp", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS), help="which tables")
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the TREC classifiers")
    parser.add_argument("--budget-seeds", type=int, default=1, help="seeds of the fixed-budget parts (dates, multi30k)")
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help=f"training budget of every run of dates and multi30k (default: {MINUTES})",
    )
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each on a 2-core CPU)")
    parser.add_argument("--report", action="store_true", help="only the tables of the runs that finished")
    args = parser.parse_args()
    tables = []
    for part in args.parts:
        rows = []
        for name, config, grid, extra in PARTS[part]:
            summary = compare(compare_args(name, config, grid, extra, part, args))
            if summary is not None:
                rows += [(summary, cell, row) for cell, row in zip(summary.cells, summary.rows)]
        tables.append((part, rows))
    for part, rows in tables:
        metric = METRIC[part]
        scale = 100 if metric == "test/bleu" else 1
        budget = (
            "the configs' epochs, best val/acc checkpoint"
            if part == "trec"
            else f"{args.minutes or MINUTES[part]:g} min of training each, last weights"
        )
        print(f"\n{part}: {metric}{' (0-100)' if scale == 100 else ''}, {budget}, mean ± sd over seeds")
        print(f"| model | n | {metric} | p vs first | epochs | s/epoch |")
        print("|---|---:|---:|---:|---:|---:|")
        for summary, cell, row in rows:
            mean, std = row[f"{metric}_mean"] * scale, row[f"{metric}_std"] * scale
            test = summary.paired.get(cell.name)
            p = "" if test is None or math.isnan(test.p) else f"{test.p:.2g}"
            label = cell.label if summary.keys != ["config"] else Path(cell.label).stem
            if summary.name.startswith(f"bench_nlp_{part}_"):
                label = f"{summary.name.removeprefix(f'bench_nlp_{part}_')} {label if summary.keys else ''}".strip()
            print(
                f"| {label} | {row['n']} | {mean:.3f}{'' if math.isnan(std) else f' ± {std:.3f}'} | {p} | "
                f"{row['epochs_mean']:.1f} | {row['seconds_per_epoch_mean']:.1f} |"
            )


if __name__ == "__main__":
    main()
