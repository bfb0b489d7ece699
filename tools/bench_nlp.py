"""NLP benchmark: each model trained for a fixed CPU-time budget through the CLI, then tested.

    FRAMEWORK_DATA_DIR=../shared/data nice -n 5 python tools/bench_nlp.py                # everything, about 25 min
    FRAMEWORK_DATA_DIR=../shared/data python tools/bench_nlp.py --parts dates trec --minutes 1

Three tables:

* dates: test exact match on date normalisation (generated, 1000 test dates) of the
  Bahdanau, Luong and no-attention recurrent decoders (domains/nlp/seq2seq_*.yaml; the
  no-attention one is the Bahdanau config with ``--model.attention=none``), greedy decoding.
* multi30k: test BLEU (sacreBLEU 13a, test_2016_flickr, greedy) of the same three and the
  Transformer (domains/nlp/*_multi30k.yaml), made CPU-sized alike: joint BPE of 4000 tokens,
  width 128, batches of 32, sequences of at most 40 tokens.
* trec: test accuracy on TREC-6 of the self-attentive, HAN and Transformer classifiers
  (domains/nlp/*_trec.yaml as they are).

Every run is ``python -m framework fit --config <config> --trainer.max_time=<budget>`` with
validation turned off (the budget goes to training), then ``test`` on the weights it ends
with. The budget counts training only (not the tokeniser, not the test). Runs use one
thread by default: on a 2-core machine shared with other jobs, two threads spin against
each other and a step takes several times longer.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `framework` and `domains` when run as a script

from framework.cli import main as cli_main  # noqa: E402

CONFIGS = ROOT / "domains" / "nlp"
QUIET = ["--config", str(ROOT / "configs" / "logger" / "csv.yaml"), "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false", "--trainer.limit_val_batches=0", "--attention_maps.every_n_epochs=0"]
MULTI30K_CPU = ["--data.vocab_size=4000", "--model.vocab_size=4000", "--model.dim=128", "--data.batch_size=32",
                "--data.max_length=40", "--task.max_length=40"]
RUNS = {  # part -> (name, config, extra arguments, metric of the table)
    "dates": [
        ("Bahdanau (additive)", "seq2seq_bahdanau", [], "test/exact"),
        ("Luong (general)", "seq2seq_luong", [], "test/exact"),
        ("no attention", "seq2seq_bahdanau", ["--model.attention=none"], "test/exact"),
    ],
    "multi30k": [
        ("Bahdanau (additive)", "seq2seq_bahdanau_multi30k", [*MULTI30K_CPU, "--model.embed_dim=64"], "test/bleu"),
        ("Luong (general)", "seq2seq_luong_multi30k", [*MULTI30K_CPU, "--model.embed_dim=64"], "test/bleu"),
        ("no attention", "seq2seq_bahdanau_multi30k", [*MULTI30K_CPU, "--model.embed_dim=64", "--model.attention=none"],
         "test/bleu"),
        ("Transformer", "transformer_mt_multi30k", [*MULTI30K_CPU, "--model.depth=2"], "test/bleu"),
    ],
    "trec": [
        ("self-attentive (r=4, penalty)", "selfattentive_trec", [], "test/acc"),
        ("HAN", "han_trec", [], "test/acc"),
        ("Transformer (pooling)", "transformer_cls_trec", [], "test/acc"),
    ],
}
MINUTES = {"dates": 1.5, "multi30k": 3.0, "trec": 1.0}


def run(config: str, extra: list[str], minutes: float) -> dict:
    """Fit ``config`` for ``minutes`` of training, test the final weights; metrics and counts."""
    budget = time.strftime("%H:%M:%S", time.gmtime(round(minutes * 60)))
    start = time.perf_counter()
    cli = cli_main(["fit", "--config", str(CONFIGS / f"{config}.yaml"), *QUIET, *extra, f"--trainer.max_time=00:{budget}"])
    trained = time.perf_counter() - start
    tested = cli.trainer.test(cli.model, datamodule=cli.datamodule, verbose=False)[0]
    steps = cli.trainer.global_step
    return {**tested, "steps": steps, "epochs": steps / cli.trainer.num_training_batches,
            "train_s": trained, "total_s": time.perf_counter() - start}


def table(part: str, minutes: float, rows: list[tuple[str, dict, str]]) -> str:
    lines = [f"{part}: {minutes:g} min of training each, then the test split",
             f"  {'model':32s} {'metric':>11s} {'value':>7s} {'steps':>6s} {'epochs':>6s} {'fit s':>6s}"]
    for name, result, metric in rows:
        value = result[metric] * (100 if metric.endswith("bleu") else 1)
        lines.append(f"  {name:32s} {metric:>11s} {value:7.3f} {result['steps']:6d} {result['epochs']:6.2f} "
                     f"{result['train_s']:6.0f}")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", choices=list(RUNS), default=list(RUNS), help="which tables")
    parser.add_argument("--minutes", type=float, default=None,
                        help=f"training budget of every run (default per part: {MINUTES})")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: see the module docstring)")
    parser.add_argument("--runs_dir", default=None, help="run folders (default: a temporary folder)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("FRAMEWORK_RUNS_DIR", args.runs_dir or tempfile.mkdtemp(prefix="bench_nlp_"))
    tables = []
    for part in args.parts:
        minutes = args.minutes or MINUTES[part]
        rows = [(name, run(config, extra, minutes), metric) for name, config, extra, metric in RUNS[part]]
        tables.append(table(part, minutes, rows))
        print("\n" + tables[-1], flush=True)
    print("\n" + "\n\n".join(tables))
    print("\nBLEU on the 0-100 scale; exact match and accuracy as fractions. Seconds measured with "
          f"{args.threads} thread(s); they depend on what else the machine runs.")


if __name__ == "__main__":
    main()
