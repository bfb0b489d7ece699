"""Cora test accuracy of GAT, GATv2 and GCN over seeds, each trained as its config says
(domains/graph/<model>_cora.yaml), run through ``python -m framework compare``.

    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_graph                  # 10 seeds each, 2 at a time
    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_graph --seeds 3 --models gat gcn --max-epochs 300

Every run is a fit and a test of the configs' protocol: full-batch training, early stopping
when val/loss has not improved for 100 epochs (the configs' EarlyStopping), the checkpoint
with the best val/acc tested once. The comparison's folder (runs/compare/bench_graph_cora/)
keeps every run; a second invocation reruns only what did not finish. What this script adds
is the papers' figures beside ours.
"""

from __future__ import annotations

import argparse
import math

from framework.commands.compare import main as compare

MODELS = ("gat", "gatv2", "gcn")
#: Test accuracy (%) on Cora's public split as published.
PAPER = {
    "gat": "83.0 ± 0.7 (Velickovic et al., ICLR 2018, 100 runs)",
    "gatv2": "not reported on Cora's public split (Brody et al., ICLR 2022)",
    "gcn": "81.5 (Kipf & Welling, ICLR 2017)",
}


def compare_args(args: argparse.Namespace) -> list[str]:
    configs = ",".join(f"domains/graph/{model}_cora.yaml" for model in args.models)
    extra = [f"--trainer.max_epochs={args.max_epochs}"] if args.max_epochs else []
    return [
        "--grid",
        f"config=[{configs}]",
        "--config",
        "configs/logger/csv.yaml",
        "--attention_maps.every_n_epochs=0",
        "--trainer.enable_model_summary=false",
        *extra,
        "--seeds",
        str(args.seeds),
        "--jobs",
        str(args.jobs),
        "--name",
        args.name,
        "--baseline",
        "gcn_cora" if "gcn" in args.models else f"{args.models[0]}_cora",
        "--metrics",
        "test/acc",
        "test/f1",
        *(["--report"] if args.report else []),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_graph", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--seeds", type=int, default=10, help="runs per model, seeds 0 .. N-1")
    parser.add_argument("--max-epochs", type=int, default=None, help="cap on epochs (default: the config's)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each on a 2-core CPU)")
    parser.add_argument("--name", default="bench_graph_cora", help="the comparison's folder under runs/compare/")
    parser.add_argument("--report", action="store_true", help="only the tables of the runs that finished")
    args = parser.parse_args()
    summary = compare(compare_args(args))
    if summary is None:
        return
    print(
        f"Cora, public split, {args.seeds} seeds, test accuracy (%) of the best val/acc checkpoint, beside the papers:"
    )
    print("| model | ours, mean ± sd | min - max | epochs (early stop) | s / epoch | paper |")
    print("|---|---:|---:|---:|---:|---|")
    for cell, row in zip(summary.cells, summary.rows):
        model = cell.label.removesuffix("_cora")
        accs = [100 * r.metrics["test/acc"] for r in summary.records[cell.name]]
        if not accs:
            continue
        std = row["test/acc_std"]
        print(
            f"| {model} | {100 * row['test/acc_mean']:.1f} ± {0.0 if math.isnan(std) else 100 * std:.1f} | "
            f"{min(accs):.1f} - {max(accs):.1f} | {row['epochs_mean']:.0f} | {row['seconds_per_epoch_mean']:.4f} | "
            f"{PAPER.get(model, '')} |"
        )


if __name__ == "__main__":
    main()
