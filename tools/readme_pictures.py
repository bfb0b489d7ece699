"""The README's pictures (``docs/pictures/*.svg``), drawn from models trained here for a minute
by the CLI, with the framework's own picture code (what the ``attention_maps`` callback logs):

* ``demo_attention.svg``: the demo (associative recall, ``domains/demo/demo.yaml``) after 4
  epochs, the last layer's attention on the first validation example (``attention/<block>``);
* ``memn2n_hops.svg``: MemN2N on generated bAbI stories (``domains/memory/memn2n.yaml``) after
  4 epochs, its hops over the first validation story of two supporting facts (the picture of
  ``images/memory_hops``);
* ``probe_rows.svg``: a non-local block over a 128 x 256 feature map (32,768 positions), the
  exact row of one of 64 probe pixels from ``capture(block, probes=64)`` on the fused path
  (no 32,768 x 32,768 map); the block's embeddings are set to compare the features, and the
  map is a scene of discs and boxes of four materials, so where a pixel looks can be checked;
* ``attention_stats.svg``: the attention statistics of the demo's two blocks over 8 epochs,
  from the run's ``metrics.csv`` (the curves W&B charts from the same metrics).

    .venv/bin/python -m tools.readme_pictures                  # 3 to 5 CPU minutes
    .venv/bin/python -m tools.readme_pictures probe_rows       # some of them
    .venv/bin/python -m tools.readme_pictures --png /tmp/look  # PNG copies too, to look at

The runs go to a temporary folder; the figures are SVG (text as text, the heat maps embedded as
pixels), so that the repository holds no PNG.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import matplotlib
import torch

from framework.__main__ import main
from framework.attention import capture
from framework.pictures import caption
from framework.runs import atomic_file

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "pictures"
QUIET = [
    "--trainer.logger=false",
    "--attention_maps.every_n_epochs=0",
    "--trainer.enable_model_summary=false",
    "--trainer.enable_progress_bar=false",
    "--trainer.max_epochs=4",
]


def fitted(config: str):
    """The model, task and first validation batch of a short fit of ``config``."""
    cli = main(["fit", "--config", config, *QUIET])
    module = cli.model.eval()
    return module.model, module.task, next(iter(cli.datamodule.val_dataloader()))


def demo_attention():
    model, task, batch = fitted("domains/demo/demo.yaml")
    name = "encoder.layers.1.attention"
    with torch.no_grad(), capture(model, name) as maps:
        task.step(model, batch, "val")
    return dict(model.named_modules())[name].weights_picture(
        maps[name][0], f"{name}, first validation example, after 4 epochs"
    )


def memn2n_hops():
    model, task, batch = fitted("domains/memory/memn2n.yaml")
    first = int((batch["task"] == 2).nonzero()[0])  # a story of two supporting facts
    with torch.no_grad():
        fig = task.images(model, {key: value[first : first + 1] for key, value in batch.items()})["memory_hops"][0]
    said = fig.get_suptitle().split("\n", 1)[-1]  # the question and the answers, under the task's first line
    caption(fig, f"MemN2N after 4 epochs: each hop's attention over validation story {first + 1} (bAbI task 2)\n{said}")
    return fig


def probe_rows():
    """The exact row of the probe pixel nearest the middle of a 128 x 256 map, non-local block."""
    from framework.attention import create

    height, width, channels, inner = 128, 256, 64, 32
    generator = torch.Generator().manual_seed(0)
    materials = torch.nn.functional.normalize(torch.randn(4, channels, generator=generator), dim=1)
    rows, columns = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    scene = torch.zeros(height, width, dtype=torch.long)  # material 0: the background
    for material, (i, j, radius) in (
        (
            1,
            (64, 128, 18),
        ),
        (
            1,
            (30, 40, 12),
        ),
        (
            2,
            (95, 60, 20),
        ),
        (
            2,
            (40, 200, 15),
        ),
    ):
        scene[(rows - i) ** 2 + (columns - j) ** 2 <= radius**2] = material
    scene[90:120, 170:240] = 3
    scene[20:50, 100:150] = 3
    x = materials[scene].permute(2, 0, 1)[None] + 0.03 * torch.randn(1, channels, height, width, generator=generator)
    block = create("non_local", channels, inner_channels=inner).eval()
    with torch.no_grad():  # theta = phi = 3 x the first 32 features: the energies compare the pixels' features
        for conv in (block.theta, block.phi):
            conv.weight.zero_()
            conv.weight[:, :inner, 0, 0] = 3 * torch.eye(inner)
            conv.bias.zero_()
    with torch.no_grad(), capture(block, probes=64) as rows_captured:
        block(x)
    record = rows_captured["non_local"][0]  # a block captured alone goes by its registry name
    held = sum(t.numel() * t.element_size() for t in (record.weights, record.logits) if t is not None) / 2**20
    return block.weights_picture(
        record,
        f"non-local block over 128 x 256 positions: the exact row of one of 64 probe "
        f"pixels ({held:.0f} MB of rows, not a {(height * width) ** 2 * 4 / 2**30:.0f} "
        "GB map); a scene of discs and boxes of four materials",
    )


STATISTICS = ("entropy_ratio", "max_weight", "top5_mass")


def attention_stats():
    """The demo's attention statistics over its epochs, as W&B charts them, from metrics.csv."""
    import csv

    from framework.pictures import figure

    cli = main(
        [
            "fit",
            "--config",
            "domains/demo/demo.yaml",
            "--config",
            "configs/logger/csv.yaml",
            *[arg for arg in QUIET if not arg.startswith(("--trainer.logger", "--trainer.max_epochs"))],
            "--trainer.max_epochs=8",
        ]
    )
    with open(Path(cli.trainer.logger.log_dir) / "metrics.csv") as f:
        lines = list(csv.DictReader(f))
    gold = next(key for key in lines[0] if key.startswith("attention/gold/"))  # the demo's: the queried pair
    lines = [line for line in lines if line[gold]]  # the validation rows
    blocks = sorted(
        {key.split("/")[1] for key in lines[0] if key.startswith("attention/encoder") and key.count("/") == 2}
    )
    fig = figure(11, 3.4)
    panels = fig.subplots(1, len(STATISTICS) + 1)
    epochs = [int(line["epoch"]) + 1 for line in lines]
    for ax, statistic in zip(panels, STATISTICS):
        for block in blocks:
            ax.plot(epochs, [float(line[f"attention/{block}/{statistic}"]) for line in lines], marker="o", label=block)
        ax.set_title(f"attention/<block>/{statistic}", fontsize=9)
        ax.set_xlabel("epoch")
    panels[-1].plot(epochs, [float(line[gold]) for line in lines], marker="o", color="black")
    panels[-1].set_title(gold, fontsize=9)
    panels[-1].set_xlabel("epoch")
    panels[0].legend(fontsize=7)
    caption(
        fig,
        "The demo's attention statistics per validation epoch (64 probe queries per block), from the run's "
        "metrics.csv: the curves W&B draws from the same metrics",
    )
    return fig


PICTURES = {
    "demo_attention": demo_attention,
    "memn2n_hops": memn2n_hops,
    "probe_rows": probe_rows,
    "attention_stats": attention_stats,
}


def save(fig, name: str, png: Path | None) -> None:
    path = OUT / f"{name}.svg"
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        with atomic_file(path) as file:
            fig.savefig(file, format="svg", metadata={"Date": None})
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KiB")
    if png:
        png.mkdir(parents=True, exist_ok=True)
        with atomic_file(png / f"{name}.png") as file:
            fig.savefig(file, format="png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tools.readme_pictures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--png", type=Path, help="also write PNG copies into this folder (not into the repository)")
    parser.add_argument(
        "names", nargs="*", metavar="name", help=f"the pictures to draw: {', '.join(PICTURES)} (default: all)"
    )
    args = parser.parse_args()
    if unknown := [name for name in args.names if name not in PICTURES]:
        parser.error(f"no picture {', '.join(unknown)} (choose from {', '.join(PICTURES)})")
    OUT.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    with tempfile.TemporaryDirectory() as runs:
        os.environ["FRAMEWORK_RUNS_DIR"] = runs
        for name in args.names or PICTURES:
            save(PICTURES[name](), name, args.png)
