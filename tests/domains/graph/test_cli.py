"""Graph configs through the command line: neighbour sampling, block switch and errors at parse time,
W&B pictures, sizes checked when the run starts (every config's run: tests/test_configs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.__main__ import main
from framework.data import DataNotFoundError

QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def run(config: str, *extra: str):
    return main(["fit", "--config", f"domains/graph/{config}.yaml", *QUIET, *extra])


def test_neighbor_sampling_from_the_command_line():
    cli = run("gat", "--trainer.fast_dev_run=true", "--data.sampling=neighbor", "--data.batch_size=4")
    assert type(cli.model.model.layers[0]).__name__ == "GraphAttention"
    assert cli.trainer.callback_metrics["train/loss"].isfinite()


def test_attention_switch_and_misspelt_block(capsys):
    cli = run("gat", "--trainer.fast_dev_run=true", "--model.attention=gatv2")
    assert type(cli.model.model.layers[1]).__name__ == "GraphAttentionV2"
    with pytest.raises(SystemExit):
        run("gat", "--model.attention=gatt")
    assert "unknown graph block 'gatt'; did you mean: gat" in capsys.readouterr().err


def test_citeseer_without_its_files_says_where_to_put_them(shared_data):
    shared_data("Planetoid")
    with pytest.raises(DataNotFoundError, match=r"Planetoid .* is missing CiteSeer/raw/ind.citeseer.x"):
        run("gat_cora", "--trainer.fast_dev_run=true", "--data.name=CiteSeer")


def test_neighbourhood_pictures_reach_wandb():
    cli = run("gat", "--trainer.max_epochs=1")
    (log,) = Path(cli.trainer.default_root_dir).glob("wandb/offline-run-*/run-*.wandb")
    pictures = list(log.parent.glob("files/media/images/images/neighbourhood_attention*.png"))
    assert len(pictures) == 2  # one per attention layer


def test_sizes_that_do_not_fit_the_graph_fail_when_the_run_starts():
    with pytest.raises(ValueError, match="model.in_channels is 5 but the graph's nodes have 34 features"):
        run("gat", "--trainer.fast_dev_run=true", "--model.in_channels=5")
    with pytest.raises(ValueError, match="task.num_classes is 2 but the graph's labels go up to 3"):
        run("gat", "--trainer.fast_dev_run=true", "--task.num_classes=2")
