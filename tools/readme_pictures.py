"""The README's pictures (``docs/pictures/*.svg``), drawn from models trained here for a minute
by the CLI, with the framework's own picture code (what the ``attention_maps`` callback logs):

* ``demo_attention.svg``: the demo (associative recall, ``domains/demo/demo.yaml``) after 4
  epochs, the last layer's attention on the first validation example (``attention/<block>``);
* ``memn2n_hops.svg``: MemN2N on generated bAbI stories (``domains/memory/memn2n.yaml``) after
  4 epochs, its hops over the first validation story of two supporting facts (the picture of
  ``images/memory_hops``).

    .venv/bin/python -m tools.readme_pictures                  # 2 to 4 CPU minutes
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "pictures"
QUIET = ["--trainer.logger=false", "--attention_maps.every_n_epochs=0", "--trainer.enable_model_summary=false",
         "--trainer.enable_progress_bar=false", "--trainer.max_epochs=4"]


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
    return dict(model.named_modules())[name].weights_picture(maps[name][0], f"{name}, first validation example, epoch 4")


def memn2n_hops():
    model, task, batch = fitted("domains/memory/memn2n.yaml")
    first = int((batch["task"] == 2).nonzero()[0])  # a story of two supporting facts
    with torch.no_grad():
        fig = task.images(model, {key: value[first:first + 1] for key, value in batch.items()})["memory_hops"][0]
    caption(fig, f"MemN2N after 4 epochs: each hop's attention over validation story {first + 1} (bAbI task 2)")
    return fig


def save(fig, name: str, png: Path | None) -> None:
    path = OUT / f"{name}.svg"
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(path, format="svg", metadata={"Date": None})
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KiB")
    if png:
        png.mkdir(parents=True, exist_ok=True)
        fig.savefig(png / f"{name}.png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tools.readme_pictures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--png", type=Path, help="also write PNG copies into this folder (not into the repository)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    with tempfile.TemporaryDirectory() as runs:
        os.environ["FRAMEWORK_RUNS_DIR"] = runs
        save(demo_attention(), "demo_attention", args.png)
        save(memn2n_hops(), "memn2n_hops", args.png)
