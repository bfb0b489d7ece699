"""Vision benchmark: segmentation heads compared over seeds on real and embedded data (through
``python -m framework compare``), and the criss-cross block alone against the CCNet authors'
algorithm and non-local.

    python -m tools.bench_vision models --data scenes --epochs 8 --seeds 3   # CCNet vs FCN vs non-local vs DANet
    python -m tools.bench_vision models --data camvid --epochs 10            # the same on ../shared/data/CamVid
                                                                             #   (CPU-sized; --full: the config's width)
    python -m tools.bench_vision blocks                                      # C=512 at 32, 64 and 97
                                                                             #   (CCNet's Cityscapes size)
    python -m tools.bench_vision blocks --device cuda                        # the criss-cross core on the GPU
                                                                             #   (default there)

``models`` is one comparison (runs/compare/bench_vision_<data>/): the domain config
(domains/vision/ccnet.yaml for the scenes, ccnet_camvid.yaml for CamVid, at half width by
domains/vision/presets/camvid_cpu.yaml unless ``--full``) with ``model.attention`` as the grid,
``--seeds`` seeds, the cosine schedule following ``--epochs``; each run's checkpoint with the best
``val/miou`` is tested. It prints test mIoU and pixel accuracy (mean ± sd), a paired t-test
against the FCN (no attention), training seconds per epoch and the peak resident memory of the
run's process, beside the CCNet paper's figure. ``blocks`` runs the block comparison of
tools/bench_attention.py: on the CPU its section 2 (fresh process per measurement, median times,
peak memory of one forward + backward), on CUDA its section 3 (the criss-cross core, Triton
kernels against the authors' algorithm, the einsum form and the compiled einsum, bf16 and fp32,
B=8 97x97, B=2 129x129 and B=2 97x97) as a markdown table.
"""

from __future__ import annotations

import argparse
import math

CONFIGS = {"scenes": "domains/vision/ccnet.yaml", "camvid": "domains/vision/ccnet_camvid.yaml"}
#: The presets that size a data set's config for a CPU (composed unless --full).
CPU_SIZED = {"camvid": "domains/vision/presets/camvid_cpu.yaml"}
HEADS = {"none": "FCN (no attention)", "criss_cross": "CCNet (RCCA, R=2)", "non_local": "non-local", "danet": "DANet"}
#: The CCNet paper (Huang et al., ICCV 2019): RCCA (R = 2) on a ResNet-101, Cityscapes val.
PAPER = (
    "CCNet paper: 81.4 % mIoU on Cityscapes val (ResNet-101, ImageNet-pretrained, GPU), FCN-style baseline far below"
)


def compare_args(args: argparse.Namespace) -> list[str]:
    """``compare``'s arguments of the ``models`` section."""
    sized = [] if args.full or args.data not in CPU_SIZED else ["--config", CPU_SIZED[args.data]]
    return [
        "--config",
        CONFIGS[args.data],
        *sized,
        "--config",
        "configs/logger/csv.yaml",
        "--grid",
        f"model.attention=[{','.join(args.heads)}]",
        f"--trainer.max_epochs={args.epochs}",
        f"--lr_scheduler.init_args.T_max={args.epochs}",
        "--trainer.enable_model_summary=false",
        "--attention_maps.every_n_epochs=0",
        *args.override,
        "--seeds",
        str(args.seeds),
        "--jobs",
        str(args.jobs),
        "--name",
        f"bench_vision_{args.data}",
        "--baseline",
        "none" if "none" in args.heads else args.heads[0],
        "--metrics",
        "test/miou",
        "test/pixel_acc",
        *(["--report"] if args.report else []),
    ]


def models_table(args: argparse.Namespace) -> None:
    """One comparison of the heads on one data set, then the table with the paper's figure."""
    from framework.commands.compare import main as compare

    summary = compare(compare_args(args))
    if summary is None:
        return
    width = "full width" if args.full or args.data not in CPU_SIZED else f"CPU-sized ({CPU_SIZED[args.data]})"
    print(
        f"\nSegmentation heads on {args.data} ({CONFIGS[args.data]}, {width}), {args.epochs} epochs, {args.seeds} "
        f"seeds, best val/miou checkpoint tested, CPU; mean ± sd over seeds; p: paired t-test against "
        f"{summary.baseline.label}"
    )
    print("| head | test mIoU | pixel acc | p | best val mIoU | s/epoch | peak MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for cell, row in zip(summary.cells, summary.rows):
        test = summary.paired.get(cell.name)
        p = "" if test is None or math.isnan(test.p) else f"{test.p:.2g}"
        print(
            f"| {HEADS.get(cell.label, cell.label)} | {_pm(row, 'test/miou')} | {_pm(row, 'test/pixel_acc')} | {p} | "
            f"{_pm(row, 'best_val/miou')} | {row['seconds_per_epoch_mean']:.1f} | {row['peak_memory_mb_mean']:.0f} |"
        )
    print(PAPER)


def _pm(row: dict, key: str) -> str:
    mean, std = row.get(f"{key}_mean", math.nan), row.get(f"{key}_std", math.nan)
    return "-" if math.isnan(mean) else f"{mean:.3f}" + ("" if math.isnan(std) else f" ± {std:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench_vision", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("section", choices=["models", "blocks"])
    parser.add_argument("--data", choices=sorted(CONFIGS), default="scenes")
    parser.add_argument("--epochs", type=int, default=8, help="the configs': 8 (scenes), 60 (CamVid)")
    parser.add_argument("--seeds", type=int, default=3, help="runs per head (models)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (models; one thread each on a 2-core CPU)")
    parser.add_argument("--report", action="store_true", help="models: only the tables of the runs that finished")
    parser.add_argument("--heads", nargs="+", choices=sorted(HEADS), default=list(HEADS))
    parser.add_argument(
        "--sides", nargs="+", type=int, default=[32, 64, 97], help="feature sizes of the CPU block comparison"
    )
    parser.add_argument(
        "--device", choices=["auto", "cpu", "cuda"], default="auto", help="where blocks runs (auto: CUDA when present)"
    )
    parser.add_argument(
        "--full", action="store_true", help="models: the configs' own widths, not the CPU-sized presets (CamVid)"
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a CLI override for every model, e.g. --override=--data.batch_size=8",
    )
    args = parser.parse_args()
    if args.section == "models":
        models_table(args)
    else:
        import torch

        from tools.bench_attention import criss_cross_gpu_table, criss_cross_table

        if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()):
            criss_cross_gpu_table()
        else:
            criss_cross_table(args.sides)


if __name__ == "__main__":
    main()
