"""FSDD spoken-digit accuracy of the audio models, on the official and a speaker-disjoint split.

Trains each model with its ``domains/audio/<config>_fsdd.yaml`` through the CLI, selects
the checkpoint with the best ``val/acc`` (a seeded 10 % of the training recordings), tests
it, and prints test accuracy, macro F1 and seconds per epoch (training + validation, wall
clock, so it depends on what else the machine runs)::

    FRAMEWORK_DATA_DIR=../shared/data python tools/bench_audio.py --epochs 8
    python tools/bench_audio.py --models cnn transformer --splits official --epochs 3
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch

from framework.cli import main

#: benchmark name -> (config, overrides)
MODELS = {
    "cnn": ("cnn_fsdd", ["--model.attention=none"]),
    "cnn_se": ("cnn_fsdd", ["--model.attention=se"]),
    "cnn_cbam": ("cnn_cbam_fsdd", []),
    "transformer": ("transformer_fsdd", []),
    "crnn_attention": ("crnn_attention_fsdd", []),
}


def split_overrides(split: str, test_speakers: list[str]) -> list[str]:
    if split == "official":
        return ["--data.split=official"]
    return ["--data.split=speakers", f"--data.test_speakers={test_speakers}".replace("'", "")]


def run(model: str, split: str, args: argparse.Namespace) -> dict[str, float]:
    """Fit one model on one split, test its best checkpoint; the figures of one table row."""
    config, overrides = MODELS[model]
    start = time.perf_counter()
    cli = main([
        "fit", "--config", f"domains/audio/{config}.yaml", "--config", "configs/logger/csv.yaml", *overrides,
        *split_overrides(split, args.test_speakers), f"--trainer.max_epochs={args.epochs}",
        f"--lr_scheduler.init_args.T_max={args.epochs}", f"--seed_everything={args.seed}",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
        "--trainer.num_sanity_val_steps=0", f"--model.frontend.init_args.normalize={args.normalize}",
    ])
    seconds = time.perf_counter() - start
    best_val = float(cli.trainer.checkpoint_callback.best_model_score)
    (tested,) = cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best", verbose=False)
    params = sum(p.numel() for p in cli.model.model.parameters())
    return {"val_acc": best_val, "test_acc": tested["test/acc"], "test_f1": tested["test/f1"],
            "s_per_epoch": seconds / args.epochs, "params": params}


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--splits", nargs="+", choices=["official", "speakers"], default=["official", "speakers"])
    parser.add_argument("--test-speakers", nargs="+", default=["george"], help="held out by the speakers split")
    parser.add_argument("--epochs", type=int, default=8, help="as the _fsdd configs")
    parser.add_argument("--normalize", choices=["clip", "bins"], default="clip",
                        help="front-end standardisation: per clip (the configs) or per mel bin (CMVN)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: on a small shared CPU more threads spin against each other)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("FRAMEWORK_RUNS_DIR", tempfile.mkdtemp(prefix="bench_audio_"))
    os.environ.setdefault("WANDB_MODE", "disabled")
    rows = [(model, split, run(model, split, args)) for split in args.splits for model in args.models]
    speakers = ",".join(args.test_speakers)
    print(f"\nFSDD, {args.epochs} epochs, seed {args.seed}, {args.threads} thread(s), normalize {args.normalize}; "
          f"best val/acc checkpoint tested; speakers split holds out {speakers}")
    print(f"| {'model':<15} | {'split':<8} | {'params':>7} | {'val acc':>7} | {'test acc':>8} | {'test F1':>7} "
          f"| {'s/epoch':>7} |")
    print(f"|{'-' * 17}|{'-' * 10}|{'-' * 9}|{'-' * 9}|{'-' * 10}|{'-' * 9}|{'-' * 9}|")
    for model, split, r in rows:
        print(f"| {model:<15} | {split:<8} | {r['params']:>7} | {r['val_acc']:>7.4f} | {r['test_acc']:>8.4f} | "
              f"{r['test_f1']:>7.4f} | {r['s_per_epoch']:>7.1f} |")


if __name__ == "__main__":
    main_bench()
