"""Word and character error rates of the listen-attend-spell recogniser on connected digit strings
made of real FSDD recordings, with each attention block.

    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_digit_strings                       # location_aware, mocha
    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_digit_strings --attentions location_aware additive \\
        --split speakers --epochs 20 --target-wer 0.05

Each run trains ``domains/audio/las_digits.yaml`` with ``--model.attention=<block>`` until the
validation WER reaches ``--target-wer`` (Lightning's EarlyStopping ``stopping_threshold``) or
``--epochs`` epochs have run, then tests the checkpoint with the best ``val/wer`` (greedy
decoding) on the test strings, which are made of the test split's recordings only (official
split: recordings 0-4 of every speaker; ``--split speakers``: the voices of ``--test-speakers``).
It prints test WER and CER, the best validation WER, the epochs run and minutes of training.
Runs go to runs/bench_digit_strings/ (``FRAMEWORK_RUNS_DIR`` moves them).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from framework.__main__ import main as cli

CONFIG = "domains/audio/las_digits.yaml"


def data_overrides(args: argparse.Namespace) -> list[str]:
    if args.split == "official":
        return ["--data.split=official"]
    return ["--data.split=speakers", f"--data.test_speakers=[{','.join(args.test_speakers)}]"]


def run(attention: str, args: argparse.Namespace) -> dict:
    """Fit until the target WER (or the epoch limit), test the best checkpoint: the figures of one row."""
    common = [
        "--config",
        CONFIG,
        "--config",
        "configs/logger/csv.yaml",
        f"--model.attention={attention}",
        *data_overrides(args),
        f"--data.train_size={args.train_size}",
        f"--seed_everything={args.seed}",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        "--attention_maps.every_n_epochs=0",
        "--experiment=bench_digit_strings",
    ]
    stopping = (
        '--trainer.callbacks+={"class_path": "lightning.pytorch.callbacks.EarlyStopping", "init_args": '
        f'{{"monitor": "val/wer", "mode": "min", "patience": {args.epochs}, '
        f'"stopping_threshold": {args.target_wer}}}}}'
    )
    start = time.perf_counter()
    fitted = cli(["fit", *common, f"--trainer.max_epochs={args.epochs}", stopping])
    minutes = (time.perf_counter() - start) / 60
    best = Path(fitted.trainer.default_root_dir) / "checkpoints" / "best.ckpt"
    best_val = float(fitted.trainer.checkpoint_callback.best_model_score)
    tested = cli(["test", *common, "--ckpt_path", str(best)])
    metrics = tested.trainer.callback_metrics
    return {
        "attention": attention,
        "wer": float(metrics["test/wer"]),
        "cer": float(metrics["test/cer"]),
        "val_wer": best_val,
        "epochs": fitted.trainer.current_epoch,
        "minutes": minutes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_digit_strings",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--attentions",
        nargs="+",
        default=["location_aware", "mocha"],
        help="cross blocks of the speller (location_aware, mocha, monotonic, additive ...)",
    )
    parser.add_argument("--split", choices=["official", "speakers"], default="official")
    parser.add_argument("--test-speakers", nargs="+", default=["george"], help="held out by the speakers split")
    parser.add_argument("--epochs", type=int, default=10, help="at most")
    parser.add_argument("--target-wer", type=float, default=0.05, help="stop once val/wer is at or below this")
    parser.add_argument("--train-size", type=int, default=4000, help="training strings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads; 1 avoids OpenMP spinning when the cores are shared (default 1)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    rows = [run(attention, args) for attention in args.attentions]
    where = "official split" if args.split == "official" else f"speakers split (test: {', '.join(args.test_speakers)})"
    print(
        f"\nConnected FSDD digit strings (2-7 digits), {where}, {args.train_size} training strings, "
        f"at most {args.epochs} epochs or val WER <= {args.target_wer}; greedy decoding; best val/wer checkpoint tested"
    )
    print("| attention | test WER | test CER | best val WER | epochs | minutes |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['attention']} | {row['wer']:.3f} | {row['cer']:.3f} | {row['val_wer']:.3f} | {row['epochs']} | "
            f"{row['minutes']:.1f} |"
        )


if __name__ == "__main__":
    main()
