"""Vision benchmark: segmentation heads compared on real and embedded data, and the
criss-cross block alone against the CCNet authors' algorithm and non-local.

    python tools/bench_vision.py models --data scenes --epochs 15     # CCNet vs FCN vs non-local vs DANet
    python tools/bench_vision.py models --data camvid --epochs 30     # the same on ../shared/data/CamVid
    python tools/bench_vision.py blocks                                # C=512 at 32, 64 and 97 (CCNet's Cityscapes size)
    python tools/bench_vision.py blocks --device cuda                  # the criss-cross core on the GPU (default there)

``models`` trains each head with its domain config (domains/vision/ccnet.yaml for the scenes,
ccnet_camvid.yaml for CamVid, with ``--model.attention`` switched) in a fresh process, selects
the checkpoint with the best ``val/miou`` and reports its test mIoU and pixel accuracy, the
median seconds per training epoch and the peak resident memory of the process above what it
held before the model was built. Every figure of
one table comes from the same run of this script; compare ratios, not absolute times, across
machines. ``blocks`` runs the block comparison of tools/bench_attention.py: on the CPU its section 2
(fresh process per measurement, median times, peak memory of one forward + backward), on CUDA
its section 3 (the criss-cross core, Triton kernels against the authors' algorithm, the einsum
form and the compiled einsum, bf16 and fp32, B=8 97x97, B=2 129x129 and B=2 97x97) as a
markdown table.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONFIGS = {"scenes": "domains/vision/ccnet.yaml", "camvid": "domains/vision/ccnet_camvid.yaml"}
HEADS = {"criss_cross": "CCNet (RCCA, R=2)", "none": "FCN (no attention)", "non_local": "non-local", "danet": "DANet"}


def _train_and_test(config: str, attention: str, epochs: int, overrides: list[str]) -> dict:
    """Fit one model with the framework's CLI, test its best checkpoint; figures as a dict."""
    import lightning.pytorch as pl

    from framework.cli import FrameworkCLI

    class EpochTimes(pl.Callback):
        """Wall-clock seconds of each training epoch (validation excluded)."""

        def __init__(self) -> None:
            self.seconds: list[float] = []

        def on_train_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
            self.start = time.perf_counter()

        def on_train_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
            self.seconds.append(time.perf_counter() - self.start)

    baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cli = FrameworkCLI(args=["--config", config, f"--model.attention={attention}", f"--trainer.max_epochs={epochs}",
                             "--trainer.logger=false", "--trainer.enable_progress_bar=false",
                             "--attention_maps.every_n_epochs=0", "--experiment=bench_vision", *overrides], run=False)
    timer = EpochTimes()
    cli.trainer.callbacks.append(timer)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    best_val = cli.trainer.checkpoint_callback.best_model_score
    (tested,) = cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best", verbose=False)
    return {"test_miou": tested["test/miou"], "test_pixel_acc": tested["test/pixel_acc"], "best_val_miou": float(best_val),
            "s_per_epoch": statistics.median(timer.seconds), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "baseline_mb": baseline_mb, "parameters": sum(p.numel() for p in cli.model.parameters())}


def models_table(data: str, epochs: int, heads: list[str], overrides: list[str]) -> None:
    """Train every head on one data set, each in a fresh process, and print the comparison."""
    print(f"Segmentation heads on {data} ({CONFIGS[data]}), {epochs} epochs, best val mIoU checkpoint tested, CPU")
    print(f"{'head':<22}{'params':>9}{'test mIoU':>11}{'pixel acc':>11}{'val mIoU':>10}{'s/epoch':>9}{'peak MB':>9}")
    for head in heads:
        command = [sys.executable, __file__, "models", "--one", CONFIGS[data], head, str(epochs), *overrides]
        out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"{head} failed:\n{out.stderr[-3000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{HEADS[head]:<22}{r['parameters'] / 1e6:>8.2f}M{r['test_miou']:>11.3f}{r['test_pixel_acc']:>11.3f}"
              f"{r['best_val_miou']:>10.3f}{r['s_per_epoch']:>9.1f}{r['peak_mb'] - r['baseline_mb']:>9.0f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("section", choices=["models", "blocks"])
    parser.add_argument("--data", choices=sorted(CONFIGS), default="scenes")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--heads", nargs="+", choices=sorted(HEADS), default=list(HEADS))
    parser.add_argument("--sides", nargs="+", type=int, default=[32, 64, 97], help="feature sizes of the CPU block comparison")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where blocks runs (auto: CUDA when present)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a CLI override for every model, e.g. --override=--data.batch_size=8")
    parser.add_argument("--one", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        config, head, epochs, *overrides = args.one
        print(json.dumps(_train_and_test(config, head, int(epochs), overrides)))
    elif args.section == "models":
        models_table(args.data, args.epochs, args.heads, args.override)
    else:
        import torch

        from tools.bench_attention import criss_cross_gpu_table, criss_cross_table

        if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()):
            criss_cross_gpu_table()
        else:
            criss_cross_table(args.sides)


if __name__ == "__main__":
    main()
