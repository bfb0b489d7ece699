"""Benchmark: per-task test error of 3-hop MemN2N (PE, LS, RN, adjacent tying) on bAbI 1k,
trained jointly on all 20 tasks and on single tasks, over seeds, beside the paper's figures;
run through ``python -m framework compare``.

    .venv/bin/python -m tools.bench_memory --joint-seeds 10 --single            # the paper's protocol (hours)
    .venv/bin/python -m tools.bench_memory --joint-seeds 2 --single 1 2 --single-seeds 3

Every run trains through the CLI (``domains/memory/memn2n_babi_joint.yaml`` and
``memn2n_babi.yaml``, whose schedules are the authors'), keeps the checkpoint with the best
validation accuracy (validation = the last 10% of each task's training questions) and tests
it on the official test files (1000 questions a task). The protocol specific to this
benchmark: the paper reports, per setting, the best of 10 runs chosen by training error; this
script reports both that selection (``compare``'s best-of-N by the lowest final
``train/error``, over the seeds that ran) and the mean ± sd over all of them. The joint
comparison is runs/compare/bench_memory_joint/, each single task runs/compare/bench_memory_task<k>/.

The paper's figures: Sukhbaatar et al., End-To-End Memory Networks, NeurIPS 2015, Table 1 (1k
training questions per task), columns "PE LS RN" (3 hops, single task) and "PE LS RN joint".
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from framework.commands.compare import main as compare

ROOT = Path(__file__).resolve().parents[1]
TASKS = range(1, 21)
#: Test error (%) of 3-hop MemN2N PE LS RN, bAbI 1k, single task and joint (Table 1).
PAPER_SINGLE = [
    0.0,
    8.3,
    40.3,
    2.8,
    13.1,
    7.6,
    17.3,
    10.0,
    13.2,
    15.1,
    0.9,
    0.2,
    0.4,
    1.7,
    0.0,
    1.3,
    51.0,
    11.1,
    82.8,
    0.0,
]
PAPER_JOINT = [
    0.0,
    11.4,
    21.9,
    13.4,
    14.4,
    2.8,
    18.3,
    9.3,
    1.9,
    6.5,
    0.3,
    0.1,
    0.2,
    6.9,
    0.0,
    2.7,
    40.4,
    9.4,
    88.0,
    0.0,
]
QUIET = [
    "--config",
    "configs/logger/csv.yaml",
    "--trainer.enable_model_summary=false",
    "--attention_maps.every_n_epochs=0",
    "--train_metric",
    "train/error",
    "--metrics",
    "test/mean_error",
    "test/acc",
]


def joint_args(args: argparse.Namespace) -> list[str]:
    epochs = [f"--trainer.max_epochs={args.joint_epochs}"] if args.joint_epochs else []
    return [
        "--config",
        "domains/memory/memn2n_babi_joint.yaml",
        *QUIET,
        *epochs,
        "--seeds",
        str(args.joint_seeds),
        "--jobs",
        str(args.jobs),
        "--name",
        "bench_memory_joint",
        *(["--report"] if args.report else []),
    ]


def single_args(task: int, args: argparse.Namespace) -> list[str]:
    epochs = [f"--trainer.max_epochs={args.single_epochs}"] if args.single_epochs else []
    return [
        "--config",
        "domains/memory/memn2n_babi.yaml",
        f"--data.tasks=[{task}]",
        f"--task.tasks=[{task}]",
        *QUIET,
        *epochs,
        "--seeds",
        str(args.single_seeds),
        "--jobs",
        str(args.jobs),
        "--name",
        f"bench_memory_task{task}",
        *(["--report"] if args.report else []),
    ]


def errors(record, tasks) -> dict[int, float]:
    return {k: 100 * record.metrics[f"test/error_task{k}"] for k in tasks if f"test/error_task{k}" in record.metrics}


def describe(summary) -> tuple[list, object]:
    """The finished runs of a one-cell comparison and its best-of-N run by training error."""
    cell = summary.cells[0]
    return summary.records[cell.name], summary.best[cell.name]["train"]


def table(single: dict[int, object], joint) -> str:
    """Markdown: per task, our test error (best of N by training error; mean ± sd) beside the paper's."""

    def mean_sd(values: list[float]) -> str:
        if not values:
            return ""
        return f"{statistics.fmean(values):.1f}" + (f" ± {statistics.stdev(values):.1f}" if len(values) > 1 else "")

    joint_runs, joint_best = describe(joint) if joint else ([], None)
    rows = [
        f"| task | single: best of {max((len(describe(s)[0]) for s in single.values()), default=0)} by train error "
        f"| single: mean ± sd | single (paper) | joint: best of {len(joint_runs)} by train error | joint: mean ± sd "
        "| joint (paper) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for k in TASKS:
        if k not in single and not joint_runs:
            continue
        s_runs, s_best = describe(single[k]) if k in single else ([], None)
        best_single = f"{errors(s_best, [k])[k]:.1f}" if s_best else ""
        best_joint = f"{errors(joint_best, [k])[k]:.1f}" if joint_best else ""
        rows.append(
            f"| {k} | {best_single} | {mean_sd([errors(r, [k])[k] for r in s_runs])} | "
            f"{PAPER_SINGLE[k - 1] if k in single else ''} | {best_joint} | "
            f"{mean_sd([errors(r, [k])[k] for r in joint_runs])} | {PAPER_JOINT[k - 1] if joint_runs else ''} |"
        )
    if joint_runs:
        means = [100 * r.metrics["test/mean_error"] for r in joint_runs]
        best = f"{100 * joint_best.metrics['test/mean_error']:.1f} (seed {joint_best.seed})" if joint_best else ""
        rows.append(f"| mean over the 20 tasks | | | 13.9 | {best} | {mean_sd(means)} | 12.4 |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_memory", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--single", type=int, nargs="*", default=[], help="tasks trained one at a time (e.g. 1 2 3 17 19)"
    )
    parser.add_argument("--single-seeds", type=int, default=10, help="runs per single task (the paper: best of 10)")
    parser.add_argument("--single-epochs", type=int, default=None, help="default: the config's (authors: 120)")
    parser.add_argument("--joint-seeds", type=int, default=10, help="joint runs (the paper: best of 10); 0: none")
    parser.add_argument("--joint-epochs", type=int, default=None, help="default: the config's (authors: 90)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each on a 2-core CPU)")
    parser.add_argument("--report", action="store_true", help="only the tables of the runs that finished")
    parser.add_argument(
        "--data-dir", default=os.environ.get("FRAMEWORK_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    )
    args = parser.parse_args()
    os.environ["FRAMEWORK_DATA_DIR"] = args.data_dir
    joint = compare(joint_args(args)) if args.joint_seeds else None
    single = {k: compare(single_args(k, args)) for k in args.single}
    single = {k: s for k, s in single.items() if s is not None}
    print(
        "\nbAbI 1k test error (%), 3-hop MemN2N PE LS RN (adjacent tying), the configs' schedules; each run's "
        "checkpoint chosen by val/acc; best of N = the run with the lowest final train/error"
    )
    print(table(single, joint))


if __name__ == "__main__":
    main()
