"""Benchmark: per-task test error of 3-hop MemN2N (PE, LS, RN, adjacent tying) on bAbI 1k,
trained on single tasks and jointly on all 20, beside the paper's figures.

    .venv/bin/python tools/bench_memory.py            # the authors' schedules, about 20 min
    .venv/bin/python tools/bench_memory.py --single 1 2 --no-joint --single-epochs 60 --single-ls-epochs 20

Each run trains through the framework's CLI (``domains/memory/memn2n_babi.yaml`` and
``memn2n_babi_joint.yaml``, with the authors' schedules by default), keeps the checkpoint with the best
validation accuracy (validation = the last 10% of each task's training questions) and tests
it on the official test files (1000 questions a task). One run per setting (seed 0); the
paper reports the best of 10 runs, chosen by training error. Runs go in parallel worker
processes of one thread each (``--jobs``): on a shared CPU this is faster than one
process with several threads.

The paper's figures: Sukhbaatar et al., End-To-End Memory Networks, NeurIPS 2015, Table 1 (1k
training questions per task), columns "PE LS RN" (3 hops, single task) and "PE LS RN joint".
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = range(1, 21)
#: Test error (%) of 3-hop MemN2N PE LS RN, bAbI 1k, single task and joint (Table 1).
PAPER_SINGLE = [0.0, 8.3, 40.3, 2.8, 13.1, 7.6, 17.3, 10.0, 13.2, 15.1, 0.9, 0.2, 0.4, 1.7, 0.0, 1.3, 51.0, 11.1, 82.8, 0.0]
PAPER_JOINT = [0.0, 11.4, 21.9, 13.4, 14.4, 2.8, 18.3, 9.3, 1.9, 6.5, 0.3, 0.1, 0.2, 6.9, 0.0, 2.7, 40.4, 9.4, 88.0, 0.0]


def train_and_test(name: str, tasks: list[int], epochs: int, ls_epochs: int, milestones: list[int],
                   runs_dir: str) -> dict:
    """One fit + test through the CLI, in a worker process with one thread; the test errors by task.
    ``ls_epochs`` 0 trains without linear start (PE RN)."""
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    os.environ["FRAMEWORK_RUNS_DIR"] = runs_dir
    from framework.cli import main

    config = "memn2n_babi_joint" if len(tasks) > 1 else "memn2n_babi"
    args = [
        "fit", "--config", f"domains/memory/{config}.yaml", "--config", "configs/logger/csv.yaml",
        f"--data.tasks={tasks}", f"--task.tasks={tasks}", f"--trainer.max_epochs={epochs}",
        f"--lr_scheduler.milestones={milestones}",
        # without LS, the authors' rate from the start: 0.01 x 32 (the configs start at the LS rate)
        *([f"--trainer.callbacks.max_epochs={ls_epochs}"] if ls_epochs else ["--model.linear_start=false",
                                                                              "--optimizer.lr=0.32"]),
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
        "--attention_maps.every_n_epochs=0", f"--experiment=bench_{name}",
    ]
    start = time.perf_counter()
    cli = main(args)
    seconds = time.perf_counter() - start
    checkpoint = cli.trainer.checkpoint_callback
    best_epoch = int(torch.load(checkpoint.best_model_path, map_location="cpu", weights_only=False)["epoch"])
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best", verbose=False)
    metrics = cli.trainer.callback_metrics
    return {
        "name": name, "seconds": seconds, "epochs": epochs, "best_epoch": best_epoch,
        "val_acc": float(checkpoint.best_model_score),
        "errors": {k: 100 * float(metrics[f"test/error_task{k}"]) for k in tasks},
        "mean_error": 100 * float(metrics["test/mean_error"]),
    }


def schedule(epochs: int, ls_epochs: int, decay_every: int) -> list[int]:
    """The authors' schedule after linear start: halve the rate every ``decay_every`` epochs."""
    return list(range(ls_epochs + decay_every, epochs, decay_every))


def table(single: dict[int, dict], joint: dict | None) -> str:
    """Markdown table: our test error beside the paper's, per task, then the means."""
    rows = ["| task | single (ours) | single (paper) | joint (ours) | joint (paper) |", "|---|---:|---:|---:|---:|"]
    shown = sorted(set(single) | (set(joint["errors"]) if joint else set()))
    fmt = lambda x: "" if x is None else f"{x:.1f}"
    for k in shown:
        ours_single = single[k]["errors"][k] if k in single else None
        ours_joint = joint["errors"][k] if joint else None
        rows.append(f"| {k} | {fmt(ours_single)} | {fmt(PAPER_SINGLE[k - 1]) if k in single else ''} | "
                    f"{fmt(ours_joint)} | {fmt(PAPER_JOINT[k - 1]) if joint else ''} |")
    if single:
        mean = lambda xs: sum(xs) / len(xs)
        rows.append(f"| mean over {len(single)} single tasks | {mean([single[k]['errors'][k] for k in single]):.1f} | "
                    f"{mean([PAPER_SINGLE[k - 1] for k in single]):.1f} | "
                    f"{fmt(mean([joint['errors'][k] for k in single])) if joint else ''} | "
                    f"{fmt(mean([PAPER_JOINT[k - 1] for k in single])) if joint else ''} |")
    if joint:
        rows.append(f"| mean over the 20 tasks | | 13.9 | {joint['mean_error']:.1f} | 12.4 |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--single", type=int, nargs="*", default=[1, 2, 3, 17, 19],
                        help="tasks trained one at a time (none: skip)")
    parser.add_argument("--single-epochs", type=int, default=120, help="authors: 120 (20 LS + 100)")
    parser.add_argument("--single-ls-epochs", type=int, default=20, help="authors: 20; 0: no linear start")
    parser.add_argument("--single-decay-every", type=int, default=25, help="authors: 25")
    parser.add_argument("--no-joint", action="store_true", help="skip joint training")
    parser.add_argument("--joint-epochs", type=int, default=90, help="authors: 90 (30 LS + 60)")
    parser.add_argument("--joint-ls-epochs", type=int, default=30, help="authors: 30; 0: no linear start")
    parser.add_argument("--joint-decay-every", type=int, default=15, help="authors: 15")
    parser.add_argument("--jobs", type=int, default=2, help="parallel worker processes (one thread each)")
    parser.add_argument("--data-dir", default=os.environ.get("FRAMEWORK_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    args = parser.parse_args()
    os.environ["FRAMEWORK_DATA_DIR"] = args.data_dir
    os.environ.setdefault("WANDB_MODE", "disabled")

    jobs = []
    if not args.no_joint:
        jobs.append(("joint", list(TASKS), args.joint_epochs, args.joint_ls_epochs,
                     schedule(args.joint_epochs, args.joint_ls_epochs, args.joint_decay_every)))
    for k in args.single:
        jobs.append((f"task{k}", [k], args.single_epochs, args.single_ls_epochs,
                     schedule(args.single_epochs, args.single_ls_epochs, args.single_decay_every)))
    single: dict[int, dict] = {}
    joint = None
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as runs_dir, concurrent.futures.ProcessPoolExecutor(
            args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(train_and_test, *job, runs_dir) for job in jobs]
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            print(f"{result['name']}: {result['seconds']:.0f} s for {result['epochs']} epochs "
                  f"({result['seconds'] / result['epochs']:.1f} s/epoch), best val/acc {result['val_acc']:.3f} "
                  f"after epoch {result['best_epoch'] + 1}, test mean error {result['mean_error']:.1f}%", flush=True)
            if result["name"] == "joint":
                joint = result
            else:
                single[int(result["name"][4:])] = result
    variant = lambda ls: "PE LS RN" if ls else "PE RN (no linear start)"
    print(f"\nbAbI 1k test error (%), 3-hop MemN2N, single {variant(args.single_ls_epochs)}, joint "
          f"{variant(args.joint_ls_epochs)}; one run each (seed 0), checkpoint chosen by val/acc; "
          f"wall time {(time.perf_counter() - start) / 60:.1f} min")
    print(table(single, joint))


if __name__ == "__main__":
    main()
