"""Evaluation benchmark: ``python -m framework evaluate`` on trained bAbI, dates, TREC and digit-scene models.

    FRAMEWORK_DATA_DIR=../shared/data python -m tools.bench_evaluate             # train (short schedules) and evaluate
    python -m tools.bench_evaluate --parts dates trec --minutes 2
    python -m tools.bench_evaluate --ckpt "dates Bahdanau=runs/.../best.ckpt"   # take a checkpoint, train nothing
    python -m tools.bench_evaluate --report                                      # the tables of finished runs

Models (configs as they are, unless said):

* babi: MemN2N on bAbI 1k task 1 and task 2 (``memn2n_babi.yaml``: linear start, the authors' SGD
  schedule, 120 epochs), tested on the official test files;
* dates: Bahdanau, Luong and Transformer on generated dates, each trained for ``--minutes`` of
  CPU time (validation off, last weights), evaluated on 300 test dates;
* trec: self-attentive, HAN and Transformer classifiers on TREC-6 (their configs' epochs);
* scenes: CCNet (criss-cross), non-local and DANet heads on generated digit scenes (``ccnet.yaml``
  and its twins, 8 epochs), evaluated on 128 test scenes.

Each model is a ``fit`` then an ``evaluate`` process of the CLI (one thread each, ``--threads``),
under ``runs/bench_evaluate/<model>/``; a finished step is not run again. The script prints
every model's table, then one summary table (the task metric, its drop under uniform weights in
every block, the permutation and erasure tests, the rank correlations with the attributions, and
the intrinsic figures against gold), and writes ``runs/bench_evaluate/evaluation.csv`` (all rows,
with a ``model`` column) and ``summary.md``.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple, Optional

from framework.runs import atomic_file, write_text_atomically

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "bench_evaluate"
QUIET = [
    "--config",
    "configs/logger/csv.yaml",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--attention_maps.every_n_epochs=0",
]
BUDGET = ["--trainer.limit_val_batches=0", "--trainer.num_sanity_val_steps=0"]


class Model(NamedTuple):
    part: str
    name: str
    config: str
    fit: list[str]
    evaluate: list[str]
    budget: bool = False  # trained for --minutes, validation off, last weights


MODELS = [
    Model("babi", "bAbI 1 MemN2N", "domains/memory/memn2n_babi.yaml", ["--data.tasks=1", "--task.tasks=[1]"], []),
    Model("babi", "bAbI 2 MemN2N", "domains/memory/memn2n_babi.yaml", ["--data.tasks=2", "--task.tasks=[2]"], []),
    Model("dates", "dates Bahdanau", "domains/nlp/seq2seq_bahdanau.yaml", [], ["--data.test_size=300"], True),
    Model("dates", "dates Luong", "domains/nlp/seq2seq_luong.yaml", [], ["--data.test_size=300"], True),
    Model("dates", "dates Transformer", "domains/nlp/transformer_mt.yaml", [], ["--data.test_size=300"], True),
    Model("trec", "TREC self-attentive", "domains/nlp/selfattentive_trec.yaml", [], []),
    Model("trec", "TREC HAN", "domains/nlp/han_trec.yaml", [], []),
    Model("trec", "TREC Transformer", "domains/nlp/transformer_cls_trec.yaml", [], []),
    Model("scenes", "scenes CCNet", "domains/vision/ccnet.yaml", [], ["--data.test_size=128"]),
    Model("scenes", "scenes non-local", "domains/vision/nonlocal.yaml", [], ["--data.test_size=128"]),
    Model("scenes", "scenes DANet", "domains/vision/danet.yaml", [], ["--data.test_size=128"]),
]
PARTS = sorted({m.part for m in MODELS})


def slug(name: str) -> str:
    return name.lower().replace(" ", "_").replace("-", "_")


def run(command: list[str], log: Path, threads: int) -> float:
    """Run a CLI process, its output into ``log``; the seconds it took (an error names the log)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "WANDB_MODE": "disabled"}
    env.setdefault("FRAMEWORK_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    start = time.time()
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "framework", *command], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    if done.returncode:
        raise SystemExit(f"{' '.join(command[:3])} failed (status {done.returncode}); see {log}")
    return time.time() - start


def checkpoint_of(folder: Path, budget: bool) -> Optional[Path]:
    for name in ("last.ckpt",) if budget else ("best.ckpt", "last.ckpt"):
        path = folder / "checkpoints" / name
        if path.is_file():
            return path
    return None


def fit(model: Model, args: argparse.Namespace) -> tuple[Path, Path]:
    """The model's run folder and checkpoint: fitted now, found from an earlier run, or given."""
    folder = RUNS / slug(model.name) / "fit"
    given = dict(entry.split("=", 1) for entry in args.ckpt).get(model.name)
    if given:
        path = Path(given)
        return path.parent.parent, path
    if (folder / "done").is_file() and (found := checkpoint_of(folder, model.budget)):
        return folder, found
    if args.report:
        raise FileNotFoundError(model.name)
    folder.mkdir(parents=True, exist_ok=True)
    extra = list(model.fit)
    if model.budget:
        extra += [
            *BUDGET,
            f"--trainer.max_time=00:{time.strftime('%H:%M:%S', time.gmtime(round(args.minutes * 60)))}",
            "--trainer.max_epochs=1000",
        ]
    print(f"[{time.strftime('%H:%M:%S')}] fit {model.name}", flush=True)
    seconds = run(
        ["fit", "--config", model.config, *QUIET, "--run_dir", str(folder), *extra],
        folder.parent / "fit.log",
        args.threads,
    )
    write_text_atomically(folder / "done", f"{seconds:.0f}\n")
    return folder, checkpoint_of(folder, model.budget)


def evaluate(model: Model, run_folder: Path, checkpoint: Path, args: argparse.Namespace) -> list[dict[str, str]]:
    folder = RUNS / slug(model.name) / "evaluate"
    table = folder / "evaluation.csv"
    if not table.is_file():
        if args.report:
            raise FileNotFoundError(model.name)
        print(f"[{time.strftime('%H:%M:%S')}] evaluate {model.name}", flush=True)
        run(
            [
                "evaluate",
                "--config",
                str(run_folder / "config.yaml"),
                "--ckpt_path",
                str(checkpoint),
                *QUIET[2:],
                "--run_dir",
                str(folder),
                f"--examples={args.examples}",
                *model.evaluate,
            ],
            folder.parent / "evaluate.log",
            args.threads,
        )
    with table.open(newline="") as handle:
        return [{"model": model.name, **row} for row in csv.DictReader(handle)]


def number(text: str) -> Optional[float]:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def fmt(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary(rows: list[dict[str, str]]) -> list[list[str]]:
    """One line per model: plain metric, uniform-all drop, permutation TVD, erasure, taus, intrinsic."""
    lines = []
    for name in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == name]

        def find(mine: list[dict[str, str]] = mine, /, **where: str) -> Optional[dict[str, str]]:
            return next((r for r in mine if all(r[k] == v for k, v in where.items())), None)

        plain = find(test="test")
        metric = plain["measure"] if plain else ""
        ablations = [
            r for r in mine if r["test"] == "ablation" and r["setting"] == "uniform" and number(r["value"]) is not None
        ]
        everything = next((r for r in ablations if r["block"] == "all"), ablations[0] if len(ablations) == 1 else None)
        tvd = find(test="permutation", measure="median output TVD")
        flips = find(test="erasure", measure="decision flips")
        taus = [
            find(test="attribution", setting=m) for m in ("gradient_x_input", "integrated_gradients", "leave_one_out")
        ]
        intrinsic = [
            r for r in mine if r["test"] == "intrinsic" and r["setting"] == "all" and number(r["value"]) is not None
        ]
        correct = max(
            (r for r in intrinsic if r["measure"] == "attention correctness"),
            key=lambda r: float(r["value"]),
            default=None,
        )
        aer = min(
            (r for r in intrinsic if r["measure"] == "alignment error rate"),
            key=lambda r: float(r["value"]),
            default=None,
        )
        lines.append(
            [
                name,
                f"{metric.replace('test/', '')} {fmt(number(plain['value']) if plain else None)}",
                fmt(number(everything["value"])) if everything else "-",
                fmt(number(tvd["value"])) if tvd else "-",
                f"{fmt(number(flips['value']))} / {fmt(number(flips['baseline']))}" if flips else "-",
                " / ".join(fmt(number(t["value"]), 2) if t else "-" for t in taus),
                (
                    f"{fmt(number(correct['value']))} vs {fmt(number(correct['baseline']))} ({correct['block']})"
                    if correct
                    else "-"
                ),
                f"{fmt(number(aer['value']))} ({aer['block']})" if aer else "-",
            ]
        )
    return lines


HEADER = [
    "model",
    "test metric",
    "uniform, all blocks",
    "permutation TVD",
    "top-1 / random-1 flips",
    "tau vs GxI / IG / LOO",
    "best correctness vs uniform",
    "best AER",
]


def markdown(lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_evaluate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=PARTS, help="which models")
    parser.add_argument("--models", nargs="+", default=None, help="model names (default: all of the parts)")
    parser.add_argument("--minutes", type=float, default=3.0, help="training budget of each dates model")
    parser.add_argument(
        "--examples", type=int, default=500, help="test examples of the faithfulness and intrinsic tests"
    )
    parser.add_argument("--threads", type=int, default=1, help="OMP threads of each process")
    parser.add_argument("--ckpt", action="append", default=[], metavar="MODEL=PATH", help="take this checkpoint")
    parser.add_argument("--report", action="store_true", help="only the tables of finished runs")
    args = parser.parse_args()
    RUNS.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, str]] = []
    for model in MODELS:
        if model.part not in args.parts or (args.models and model.name not in args.models):
            continue
        try:
            run_folder, checkpoint = fit(model, args)
            found = evaluate(model, run_folder, checkpoint, args)
        except FileNotFoundError:
            print(f"{model.name}: not run yet", flush=True)
            continue
        rows += found
        print(f"\n== {model.name}", flush=True)
        width = max(len(r["block"]) for r in found)
        for r in found:
            baseline = f"{r['baseline']} ({r['against']})" if r["baseline"] else r["against"]
            print(
                f"  {r['test']:<12} {r['block']:<{width}}  {r['setting'][:48]:<48} {r['measure']:<28} "
                f"{fmt(number(r['value']), 4):>8}  {baseline}",
                flush=True,
            )
    if not rows:
        return
    columns = ["model", "test", "block", "setting", "measure", "value", "baseline", "against"]
    with atomic_file(RUNS / "evaluation.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)
    table = markdown(summary(rows))
    write_text_atomically(RUNS / "summary.md", table + "\n")
    print("\n" + table)
    print(f"\nall rows: {RUNS / 'evaluation.csv'}")


if __name__ == "__main__":
    main()
