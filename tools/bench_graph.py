"""Cora test accuracy over seeds (mean, standard deviation) and seconds per epoch of GAT,
GATv2 and GCN, each trained exactly as its config says (domains/graph/<model>_cora.yaml).

    FRAMEWORK_DATA_DIR=../shared/data python tools/bench_graph.py                  # 10 seeds each
    FRAMEWORK_DATA_DIR=../shared/data python tools/bench_graph.py --seeds 3 --models gat

Each run is one full-batch training of the config's model, data and optimizer, with the
configs' protocol: after every epoch the model is evaluated (dropout off) on the validation
and test masks; training stops when the validation loss has not improved for ``patience``
epochs (the config's EarlyStopping) or after ``max_epochs``; the epoch with the highest
validation accuracy (the first, on ties: the configs' best checkpoint) selects the test
accuracy reported. The loop is plain PyTorch around the domain's modules (data module, model,
task loss), so the seconds per epoch (one training step plus one evaluation forward) are
the model's, without Lightning's logging and checkpoint writes.

The GAT paper reports 83.0 +- 0.7 % on Cora (100 runs, its own early stopping on
validation loss and accuracy); the GCN paper 81.5 %.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import torch
import yaml
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `domains` when run as a script

from domains.graph import NodeClassifier, PlanetoidData  # noqa: E402

MODELS = ("gat", "gatv2", "gcn")


def load_config(model: str) -> dict:
    """The parts of ``domains/graph/<model>_cora.yaml`` a run needs."""
    path = ROOT / "domains" / "graph" / f"{model}_cora.yaml"
    config = yaml.safe_load(path.read_text())
    data = yaml.safe_load((path.parent / config["data"]).read_text())  # datasets/cora.yaml, beside the config
    trainer = config["trainer"]
    stopping = [c["init_args"] for c in trainer.get("callbacks", []) if c["class_path"].endswith("EarlyStopping")]
    return {
        "model": config["model"]["init_args"],
        "data": data["init_args"],
        "optimizer": config["optimizer"],
        "max_epochs": trainer["max_epochs"],
        "patience": stopping[0]["patience"] if stopping else trainer["max_epochs"],
    }


def make_optimizer(spec: dict, parameters) -> torch.optim.Optimizer:
    module, _, name = spec["class_path"].rpartition(".")
    return getattr(importlib.import_module(module), name)(parameters, **spec.get("init_args", {}))


def train_once(config: dict, graph, seed: int, max_epochs: int, patience: int) -> dict:
    """One run: test accuracy at the best validation epoch, epochs run, seconds per epoch."""
    torch.manual_seed(seed)
    model = NodeClassifier(**config["model"])
    optimizer = make_optimizer(config["optimizer"], model.parameters())
    train, val, test = graph.train_mask, graph.val_mask, graph.test_mask
    best_acc, best_loss, test_at_best, since_better, epochs = -1.0, float("inf"), 0.0, 0, 0
    start = time.perf_counter()
    for epochs in range(1, max_epochs + 1):
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(graph.x, graph.edge_index)[train], graph.y[train]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            logits = model(graph.x, graph.edge_index)
        val_loss = F.cross_entropy(logits[val], graph.y[val]).item()
        correct = logits.argmax(-1) == graph.y
        val_acc, test_acc = correct[val].float().mean().item(), correct[test].float().mean().item()
        if val_acc > best_acc:
            best_acc, test_at_best = val_acc, test_acc
        since_better = 0 if val_loss < best_loss else since_better + 1
        best_loss = min(best_loss, val_loss)
        if since_better >= patience:
            break
    seconds = time.perf_counter() - start
    return {"test_acc": test_at_best, "val_acc": best_acc, "epochs": epochs, "s_per_epoch": seconds / epochs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--seeds", type=int, default=10, help="runs per model, seeds 0 .. N-1")
    parser.add_argument("--max-epochs", type=int, default=None, help="cap on epochs (default: the config's)")
    parser.add_argument("--patience", type=int, default=None, help="early-stopping patience (default: the config's)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads; 1 avoids OpenMP spinning when the cores are shared (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = []
    for name in args.models:
        config = load_config(name)
        data = PlanetoidData(**config["data"])
        data.prepare_data()
        data.setup("fit")
        max_epochs, patience = args.max_epochs or config["max_epochs"], args.patience or config["patience"]
        runs = [train_once(config, data.graph, seed, max_epochs, patience) for seed in range(args.seeds)]
        accs = [100 * r["test_acc"] for r in runs]
        rows.append((
            name, f"{statistics.mean(accs):.1f} +- {statistics.stdev(accs) if len(accs) > 1 else 0.0:.1f}",
            f"{min(accs):.1f} - {max(accs):.1f}", f"{statistics.mean(r['epochs'] for r in runs):.0f}",
            f"{statistics.mean(r['s_per_epoch'] for r in runs):.4f}",
        ))
        print(f"{name}: " + ", ".join(f"seed {i} {a:.1f} ({r['epochs']} ep)" for i, (a, r) in enumerate(zip(accs, runs))),
              flush=True)

    print(f"\nCora, public split, {args.seeds} seeds, {args.threads} thread(s); test accuracy at the best validation epoch")
    header = ("model", "test acc % (mean +- sd)", "min - max", "epochs", "s / epoch")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    for line in (header, tuple("-" * w for w in widths), *rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))


if __name__ == "__main__":
    main()
