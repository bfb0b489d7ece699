"""FSDD spoken-digit accuracy of the audio models on the official and a speaker-disjoint split,
over seeds, run through ``python -m framework compare``.

    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_audio                     # 3 seeds, both splits
    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_audio --models cnn crnn_attention \\
        --splits official --epochs 3

One comparison per split (runs/compare/bench_audio_<split>/): each model trained with its
``domains/audio/<model>_fsdd.yaml`` (the cosine schedule follows ``--epochs``), the checkpoint
with the best ``val/acc`` (a seeded 10 % of the training recordings) tested; test accuracy
and macro F1 as mean ± std over the seeds, a paired t-test against the CNN without attention,
seconds per training epoch. What this script adds: the two splits (the speaker-disjoint one
holds out ``--test-speakers``) and one table of both. The CNN with another block is a
comparison of its own: ``python -m framework compare --config domains/audio/cnn_fsdd.yaml
--grid model.attention=[none,se,cbam,criss_cross]``.
"""

from __future__ import annotations

import argparse
import math

from framework.commands.compare import main as compare

MODELS = ("cnn", "cnn_cbam", "transformer", "crnn_attention")


def split_overrides(split: str, test_speakers: list[str]) -> list[str]:
    if split == "official":
        return ["--data.split=official"]
    return ["--data.split=speakers", f"--data.test_speakers=[{','.join(test_speakers)}]"]


def compare_args(split: str, args: argparse.Namespace) -> list[str]:
    configs = ",".join(f"domains/audio/{model}_fsdd.yaml" for model in args.models)
    return [
        "--grid",
        f"config=[{configs}]",
        "--config",
        "configs/logger/csv.yaml",
        *split_overrides(split, args.test_speakers),
        f"--trainer.max_epochs={args.epochs}",
        f"--lr_scheduler.init_args.T_max={args.epochs}",
        "--trainer.num_sanity_val_steps=0",
        "--trainer.enable_model_summary=false",
        "--attention_maps.every_n_epochs=0",
        f"--model.frontend.init_args.normalize={args.normalize}",
        "--seeds",
        str(args.seeds),
        "--jobs",
        str(args.jobs),
        "--name",
        f"bench_audio_{split}",
        "--baseline",
        f"{args.models[0]}_fsdd",
        "--metrics",
        "test/acc",
        "test/f1",
        *(["--report"] if args.report else []),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_audio", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS), help="the first is the baseline")
    parser.add_argument("--splits", nargs="+", choices=["official", "speakers"], default=["official", "speakers"])
    parser.add_argument("--test-speakers", nargs="+", default=["george"], help="held out by the speakers split")
    parser.add_argument("--epochs", type=int, default=8, help="as the _fsdd configs")
    parser.add_argument(
        "--normalize",
        choices=["clip", "bins"],
        default="clip",
        help="front-end standardisation: per clip (the configs) or per mel bin (CMVN)",
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each on a 2-core CPU)")
    parser.add_argument("--report", action="store_true", help="only the tables of the runs that finished")
    args = parser.parse_args()
    tables = []
    for split in args.splits:
        summary = compare(compare_args(split, args))
        if summary is not None:
            tables.append((split, summary))
    speakers = ",".join(args.test_speakers)
    print(
        f"\nFSDD, {args.epochs} epochs, {args.seeds} seeds, best val/acc checkpoint tested; the speakers split holds "
        f"out {speakers}; mean ± sd over seeds, p: paired t-test against {args.models[0]}"
    )
    print("| model | split | test acc | test F1 | p vs " + args.models[0] + " | s/epoch |")
    print("|---|---|---:|---:|---:|---:|")
    for split, summary in tables:
        for cell, row in zip(summary.cells, summary.rows):
            test = summary.paired.get(cell.name)
            p = "" if test is None or math.isnan(test.p) else f"{test.p:.2g}"
            print(
                f"| {cell.label.removesuffix('_fsdd')} | {split} | {_pm(row, 'test/acc')} | {_pm(row, 'test/f1')} | "
                f"{p} | {row['seconds_per_epoch_mean']:.1f} |"
            )


def _pm(row: dict, metric: str) -> str:
    mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
    return f"{mean:.3f}" + ("" if math.isnan(std) else f" ± {std:.3f}")


if __name__ == "__main__":
    main()
