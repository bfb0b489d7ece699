"""Benchmarks of the recommender domain.

Quality (the default): HR@10 and NDCG@10 on MovieLens-100K of SASRec, BERT4Rec, GRU4Rec and
the most-popular baseline under both evaluation protocols (full ranking over all items,
history excluded; the SASRec paper's 100 sampled negatives), over seeds, run through
``python -m framework compare`` (runs/compare/bench_recommender_ml100k/).

Each model is trained with its config ``domains/recommender/<model>_ml100k.yaml``; the
checkpoint with the best validation NDCG@10 (full ranking) is tested by full ranking (the
comparison's own test), and this script tests it again with ``--task.protocol=sampled`` (the
protocol specific to this benchmark), on the users' last items (leave-one-out). Mean ± sd over
the seeds, and a paired t-test against the first model, as ``compare`` prints them.

    FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m tools.bench_recommender --seeds 3
    .venv/bin/python -m tools.bench_recommender --models sasrec popularity --seeds 1
    .venv/bin/python -m tools.bench_recommender --models sasrec gru4rec --set=--task.loss=softmax --name ml100k_softmax

Seconds per epoch are the training batches of an epoch (validation excluded), the median per
run: on a shared machine they include its contention. The random draws are seeded by the seed.

Scale (``--scale``): the costs at a real catalogue size, on generated histories shaped like
the Amazon Games file of the SASRec paper (31,013 users, 23,715 items, 287,000 interactions):
30,000 users, 25,000 items, a long-tailed (Zipf) item popularity and log-normal history
lengths with median 6 and mean about 9. The histories are written to a file in the SASRec
format and read back by ``UserItemSequences``, as a user's file would be. Measured: set-up
seconds (reading, indexing and padding; then the negatives, drawn with an empty cache and read
from a filled one), seconds of one training epoch per model and loss, and seconds of a
full-ranking and a sampled evaluation pass over every user; then the full-ranking pass
again with 1,000,000 items (the scoring path at a large catalogue). On the CPU, and on the GPU
where there is one.

    OMP_NUM_THREADS=1 .venv/bin/python -m tools.bench_recommender --scale
    OMP_NUM_THREADS=1 .venv/bin/python -m tools.bench_recommender --scale --fits sasrec:bce popularity
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.callbacks import Callback

from domains.recommender import (
    BERT4Rec,
    GRU4Rec,
    MaskedItemRanking,
    MostPopular,
    NextItemRanking,
    SASRec,
    SequenceData,
    UserItemSequences,
)
from domains.recommender.data import taste_histories
from framework import TaskModule
from framework.__main__ import main as main_cli
from framework.commands.compare import main as compare
from framework.runs import atomic_file, read_summary

CONFIGS = Path(__file__).resolve().parents[1] / "domains" / "recommender"
MODELS = ("sasrec", "bert4rec", "gru4rec", "popularity")


def quality(args: argparse.Namespace) -> None:
    """The MovieLens-100K table: a comparison of the models' configs, then the sampled protocol."""
    configs = ",".join(str(CONFIGS / f"{model}_ml100k.yaml") for model in args.models)
    summary = compare(
        [
            "--grid",
            f"config=[{configs}]",
            "--config",
            "configs/logger/csv.yaml",
            "--trainer.enable_model_summary=false",
            *(args.set or []),
            "--seeds",
            str(args.seeds),
            "--jobs",
            str(args.jobs),
            "--name",
            args.name,
            "--metrics",
            "test/hr@10",
            "test/ndcg@10",
            *(["--report"] if args.report else []),
        ]
    )
    if summary is None:
        return
    print(
        "\nMovieLens-100K, leave-one-out test (943 users, 1349 items), the best val/ndcg@10 checkpoint; "
        f"mean ± sd over {args.seeds} seed(s)"
    )
    print("| model | n | HR@10 full | NDCG@10 full | HR@10, 100 negatives | NDCG@10, 100 negatives | s/epoch |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for cell, row in zip(summary.cells, summary.rows):
        records = summary.records[cell.name]
        if not records:
            continue
        sampled = [sampled_test(record.run_dir) for record in records]
        full = [record.metrics for record in records]
        print(
            f"| {cell.label.removesuffix('_ml100k')} | {len(records)} | {spread(m['test/hr@10'] for m in full)} | "
            f"{spread(m['test/ndcg@10'] for m in full)} | {spread(m['test/hr@10_sampled100'] for m in sampled)} | "
            f"{spread(m['test/ndcg@10_sampled100'] for m in sampled)} | {row['seconds_per_epoch_mean']:.1f} |"
        )


def sampled_test(run_dir: Path) -> dict[str, float]:
    """Test metrics of a run's best checkpoint with 100 sampled negatives (its own folder, read
    back when it exists)."""
    folder = run_dir / "test_sampled"
    done = read_summary(folder).get("test", {})
    if done.get("status") != "finished":
        main_cli(
            [
                "test",
                "--config",
                str(run_dir / "config.yaml"),
                "--ckpt_path",
                str(run_dir / "checkpoints" / "best.ckpt"),
                "--task.protocol=sampled",
                "--run_dir",
                str(folder),
                "--trainer.enable_progress_bar=false",
                "--trainer.enable_model_summary=false",
            ]
        )
        done = read_summary(folder)["test"]
    return done["metrics"]


def spread(values) -> str:
    """mean ± sample sd of some figures (the mean alone for one)."""
    values = list(values)
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.3f}"
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return f"{mean:.3f} ± {sd:.3f}"


#: The fits of --scale: model:loss (negatives: 1 for bce, 100 for sampled_softmax).
FITS = (
    "sasrec:bce",
    "sasrec:sampled_softmax",
    "sasrec:softmax",
    "gru4rec:bce",
    "bert4rec:sampled_softmax",
    "popularity",
)


def popularity_histories(num_users: int, num_items: int, seed: int = 0) -> list[np.ndarray]:
    """Histories without sequential structure, for the scoring path at a catalogue too large for
    the taste chain's tables: log-normal lengths (median 6), items drawn by a Zipf popularity."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.rint(rng.lognormal(np.log(6), 0.9, num_users)), 3, 2000).astype(np.int64)
    weights = 1.0 / np.arange(1, num_items + 1)
    items = (
        rng.permutation(num_items)[np.searchsorted(np.cumsum(weights / weights.sum()), rng.random(int(lengths.sum())))]
        + 1
    )
    return np.split(np.minimum(items, num_items), np.cumsum(lengths)[:-1])


class PopularitySequences(SequenceData):
    """:func:`popularity_histories` over a catalogue of ``num_items`` (items no user touched are
    candidates too), for the scoring path."""

    def __init__(self, num_users: int, num_items: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.size = (num_users, num_items)
        self.num_items = num_items

    def load(self) -> tuple[list[np.ndarray], int]:
        return popularity_histories(*self.size, seed=self.seed), self.size[1]


def write_sasrec_file(path: Path, num_users: int, num_items: int, seed: int = 0) -> dict[str, float]:
    """Generated histories (median length 6, Zipf popularity) as ``user item`` lines; what was made.
    Up to 100,000 items: the taste chain of :mod:`domains.recommender.data.generated` (item
    successors and user tastes); beyond: :func:`popularity_histories`."""
    start = time.perf_counter()
    if num_items <= 100_000:
        histories = taste_histories(
            num_users, num_items, min_length=3, max_length=2000, num_tastes=50, median_length=6, seed=seed
        )
    else:
        histories = popularity_histories(num_users, num_items, seed)
    lengths = np.array([len(h) for h in histories])
    users = np.repeat(np.arange(1, num_users + 1), lengths)
    with atomic_file(path, "w") as file:  # a later run reads a file that is there
        np.savetxt(file, np.c_[users, np.concatenate(histories)], fmt="%d")
    return {
        "users": num_users,
        "items": len(np.unique(np.concatenate(histories))),
        "interactions": int(lengths.sum()),
        "median": float(np.median(lengths)),
        "mean": float(lengths.mean()),
        "longest": int(lengths.max()),
        "seconds": time.perf_counter() - start,
    }


class Clock:
    """Wall-clock and CPU seconds of this process since it was made (on a shared machine the
    wall clock also counts the time others held the cores; the CPU seconds do not)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def timed_setup(path: Path, eval_batch_size: int) -> tuple[UserItemSequences, tuple, tuple]:
    """A data module on the file, the seconds of its set-up (read, index, pad) and of its negatives."""
    data = UserItemSequences(path=str(path), max_len=50, batch_size=128, eval_batch_size=eval_batch_size)
    clock = Clock()
    data.setup("fit")
    cheap, clock = clock.read(), Clock()
    data.draw_negatives()
    return data, cheap, clock.read()


class EpochTimer(Callback):
    """Wall-clock and CPU seconds of each training epoch (its batches, no validation)."""

    def __init__(self) -> None:
        self.seconds: list[tuple[float, float]] = []

    def on_train_epoch_start(self, *args) -> None:
        self.clock = Clock()

    def on_train_epoch_end(self, *args) -> None:
        self.seconds.append(self.clock.read())


def scale_model(fit: str, num_items: int) -> tuple[torch.nn.Module, object]:
    name, _, loss = fit.partition(":")
    negatives = 100 if loss == "sampled_softmax" else 1
    if name == "popularity":
        return MostPopular(num_items), NextItemRanking()
    if name == "bert4rec":
        return BERT4Rec(num_items, dim=64, max_len=50), MaskedItemRanking(loss=loss or "softmax", negatives=negatives)
    model = SASRec(num_items, dim=64, max_len=50) if name == "sasrec" else GRU4Rec(num_items, dim=64, hidden=100)
    return model, NextItemRanking(loss=loss or "bce", negatives=negatives)


def trainer(accelerator: str, **kwargs) -> pl.Trainer:
    return pl.Trainer(
        accelerator=accelerator,
        devices=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        **kwargs,
    )


def timed_epoch(fit: str, data: UserItemSequences, accelerator: str) -> tuple[tuple, TaskModule]:
    model, task = scale_model(fit, data.num_items)
    module = TaskModule(model, task)
    module.configure_optimizers = lambda: torch.optim.Adam(module.parameters(), lr=1e-3)
    timer = EpochTimer()
    trainer(accelerator, max_epochs=1, limit_val_batches=0, num_sanity_val_steps=0, callbacks=[timer]).fit(
        module, datamodule=data
    )
    return timer.seconds[0], module


def timed_evaluation(module: TaskModule, data: SequenceData, protocol: str, accelerator: str) -> tuple:
    """Seconds of one test pass over every user under ``protocol``."""
    evaluated = TaskModule(module.model, NextItemRanking(protocol=protocol))
    clock = Clock()
    trainer(accelerator).test(evaluated, datamodule=data, verbose=False)
    return clock.read()


def scale(args: argparse.Namespace) -> None:
    accelerators = ["cpu"] + (["gpu"] if torch.cuda.is_available() else [])
    rows: list[tuple[str, str, tuple]] = []

    def row(case: str, what: str, seconds: tuple) -> None:
        rows.append((case, what, seconds))
        print(f"{case}: {what}: {seconds[0]:.2f} s ({seconds[1]:.2f} s CPU)", flush=True)

    with tempfile.TemporaryDirectory() as folder:
        os.environ["FRAMEWORK_CACHE_DIR"] = str(Path(folder) / "cache")  # an empty cache: the first draw is cold
        path = Path(folder) / "generated.txt"
        made = write_sasrec_file(path, args.users, args.items)
        print(
            f"generated {made['users']} users, {made['items']} items, {made['interactions']} interactions "
            f"(history length median {made['median']:.0f}, mean {made['mean']:.1f}, longest {made['longest']}) "
            f"in {made['seconds']:.1f} s",
            flush=True,
        )
        data, cheap, cold = timed_setup(path, args.eval_batch_size)
        _, _, warm = timed_setup(path, args.eval_batch_size)
        case = f"{made['users']} x {data.num_items}"
        row(case, "set-up: read, index, pad", cheap)
        row(case, "set-up: negatives, empty cache", cold)
        row(case, "set-up: negatives, from the cache", warm)
        for accelerator in accelerators:
            trained = None
            for fit in args.fits:
                data, _, _ = timed_setup(path, args.eval_batch_size)
                seconds, module = timed_epoch(fit, data, accelerator)
                row(case, f"epoch {fit} ({accelerator})", seconds)
                if fit.startswith("sasrec") and trained is None:
                    trained = module
            if trained is not None:
                for protocol in ("full", "sampled"):
                    row(
                        case,
                        f"evaluation {protocol} ({accelerator})",
                        timed_evaluation(trained, data, protocol, accelerator),
                    )
        if args.large_items:
            large = PopularitySequences(
                args.large_users, args.large_items, max_len=50, eval_batch_size=max(1, args.eval_batch_size // 4)
            )
            clock = Clock()
            large.setup("fit")
            cheap, clock = clock.read(), Clock()
            large.draw_negatives()
            case = f"{large.num_users} x {large.num_items}"
            row(case, "set-up: generate, index, pad", cheap)
            row(case, "set-up: negatives, no cache", clock.read())
            for accelerator in accelerators:
                module = TaskModule(SASRec(large.num_items, dim=64, max_len=50), NextItemRanking())
                for protocol in ("full", "sampled"):
                    wall, cpu = timed_evaluation(module, large, protocol, accelerator)
                    row(case, f"evaluation {protocol}, untrained SASRec ({accelerator})", (wall, cpu))
                    per = 1000 / large.num_users
                    row(case, f"  the same per 1,000 users ({accelerator})", (wall * per, cpu * per))
    print(f"\nRecommender at scale (torch threads: {torch.get_num_threads()}); seconds, wall clock and CPU")
    width = max(len(what) for _, what, _ in rows)
    print(f"{'users x items':<18} {'':<{width}} {'wall':>8} {'CPU':>8}")
    for case, what, (wall, cpu) in rows:
        print(f"{case:<18} {what:<{width}} {wall:>8.2f} {cpu:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bench_recommender", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--seeds", type=int, default=3, help="runs per model, seeds 0 .. N-1")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each on a 2-core CPU)")
    parser.add_argument(
        "--name", default="bench_recommender_ml100k", help="the comparison's folder under runs/compare/"
    )
    parser.add_argument("--report", action="store_true", help="only the tables of the runs that finished")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (on a busy shared machine one thread is several times faster than two)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=None,
        metavar="--KEY=VALUE",
        help="a setting passed on to every model's fit, e.g. --set=--task.loss=softmax (repeatable)",
    )
    parser.add_argument("--scale", action="store_true", help="the costs at real catalogue sizes (see above)")
    parser.add_argument("--users", type=int, default=30_000, help="--scale: users")
    parser.add_argument("--items", type=int, default=25_000, help="--scale: items")
    parser.add_argument(
        "--fits", nargs="+", default=list(FITS), help=f"--scale: the epochs to time ({', '.join(FITS)})"
    )
    parser.add_argument(
        "--eval-batch-size",
        type=int,
        default=256,
        help="--scale: users per evaluation batch (a quarter of it at 1,000,000 items)",
    )
    parser.add_argument(
        "--large-items", type=int, default=1_000_000, help="--scale: items of the scoring path (0: skip)"
    )
    parser.add_argument(
        "--large-users",
        type=int,
        default=3_000,
        help="--scale: users of the scoring path (its evaluation costs grow with users x items)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.scale:
        scale(args)
        return

    quality(args)


if __name__ == "__main__":
    main()
