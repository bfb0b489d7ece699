"""Benchmark of the recommender domain on MovieLens-100K: HR@10 and NDCG@10 of SASRec,
BERT4Rec, GRU4Rec and the most-popular baseline under both evaluation protocols (full
ranking over all items, history excluded; the SASRec paper's 100 sampled negatives), and
the training seconds per epoch.

Each model is trained with its config ``domains/recommender/<model>_ml100k.yaml`` (the
epochs and batch size given here override the config's); the checkpoint with the best
validation NDCG@10 (full ranking) is then tested under both protocols, on the users' last
items (leave-one-out).

    FRAMEWORK_DATA_DIR=../shared/data nice -n 5 .venv/bin/python tools/bench_recommender.py
    .venv/bin/python tools/bench_recommender.py --models sasrec popularity --epochs 5

Seconds per epoch are the training batches of an epoch (forward, backward, step; no
validation), averaged over the epochs: on a shared machine they include its contention.
The random draws are seeded by each config's ``seed_everything``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback

from domains.recommender import MaskedItemRanking, NextItemRanking
from framework import TaskModule
from framework.cli import FrameworkCLI

CONFIGS = Path(__file__).resolve().parents[1] / "domains" / "recommender"
MODELS = ("sasrec", "bert4rec", "gru4rec", "popularity")


class BatchTimer(Callback):
    """Wall-clock seconds of the training batches, per epoch."""

    def __init__(self) -> None:
        self.epochs: list[float] = []
        self.start = 0.0

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.epochs.append(0.0)

    def on_train_batch_start(self, *args) -> None:
        self.start = time.perf_counter()

    def on_train_batch_end(self, *args) -> None:
        self.epochs[-1] += time.perf_counter() - self.start


def train(name: str, epochs: int | None, batch_size: int | None, runs_dir: Path) -> tuple[Path, float, FrameworkCLI]:
    """Fit one config; the best checkpoint, seconds per epoch and the CLI (its data module)."""
    args = ["--config", str(CONFIGS / f"{name}_ml100k.yaml"), "--config", "configs/logger/csv.yaml",
            "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
            "--run_dir", str(runs_dir / name)]
    if epochs and name != "popularity":  # one epoch counts the training split
        args.append(f"--trainer.max_epochs={epochs}")
    if batch_size:
        args.append(f"--data.batch_size={batch_size}")
    cli = FrameworkCLI(args=args, run=False)
    timer = BatchTimer()
    cli.trainer.callbacks.append(timer)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return Path(cli.trainer.checkpoint_callback.best_model_path), sum(timer.epochs) / len(timer.epochs), cli


def test(checkpoint: Path, cli: FrameworkCLI, protocol: str) -> dict[str, float]:
    """Test metrics of a checkpoint under one protocol (the task's training settings kept)."""
    module = TaskModule.load_from_checkpoint(checkpoint)
    objective = MaskedItemRanking if isinstance(module.task, MaskedItemRanking) else NextItemRanking
    evaluated = TaskModule(module.model, objective(protocol=protocol))
    trainer = pl.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    return trainer.test(evaluated, datamodule=cli.datamodule, verbose=False)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--epochs", type=int, default=None,
                        help="training epochs of the learned models (default: each config's max_epochs)")
    parser.add_argument("--batch-size", type=int, default=None, help="override the configs' data.batch_size")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/bench_recommender"))
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (on a busy shared machine one thread is several times faster than two)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = []
    for name in args.models:
        checkpoint, seconds, cli = train(name, args.epochs, args.batch_size, args.runs_dir)
        full, sampled = test(checkpoint, cli, "full"), test(checkpoint, cli, "sampled")
        epochs = cli.trainer.max_epochs
        rows.append((name, epochs, full["test/hr@10"], full["test/ndcg@10"], sampled["test/hr@10_sampled100"],
                     sampled["test/ndcg@10_sampled100"], seconds))

    print("\nMovieLens-100K, leave-one-out test (943 users, 1349 items); best checkpoint by val/ndcg@10 (full)")
    print(f"{'model':<11} {'epochs':>6} {'HR@10 full':>10} {'NDCG@10 full':>12} {'HR@10 s100':>10} "
          f"{'NDCG@10 s100':>12} {'s/epoch':>8}")
    for name, epochs, hr, ndcg, hr_s, ndcg_s, seconds in rows:
        print(f"{name:<11} {epochs:>6} {hr:>10.4f} {ndcg:>12.4f} {hr_s:>10.4f} {ndcg_s:>12.4f} {seconds:>8.1f}")


if __name__ == "__main__":
    main()
