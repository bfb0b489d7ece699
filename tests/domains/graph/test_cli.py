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


@pytest.mark.slow
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


@pytest.mark.parametrize(
    "config, option, message",
    [
        ("gat", "--model.heads=0", "model.heads: expected an int >= 1, got '0'"),
        ("gat", "--model.num_layers=0", "model.num_layers: expected an int >= 1, got '0'"),
        ("gat", "--model.dropout=1.0", "model.dropout: expected a number in [0, 1), got '1.0'"),
        ("gat", "--data.sampling=mini", "data.sampling: "),
        ("gat", "--data.num_neighbors=[10, 0]", "data.num_neighbors: "),
        ("gat", "--task.image_node=-1", "task.image_node: expected an int >= 0, got '-1'"),
        ("han", "--data.metapaths=[APA, APV]", "data.metapaths: "),
        ("han", "--data.homophily=1.5", "data.homophily: expected a number in [0, 1], got '1.5'"),
    ],
)
def test_a_value_outside_its_keys_domain_fails_while_parsing_with_the_key(capsys, monkeypatch, config, option, message):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)  # the one-line error a user sees
    with pytest.raises(SystemExit) as stop:
        run(config, option)
    assert stop.value.code == 2
    line = capsys.readouterr().err.splitlines()[0]
    assert line.startswith(f"error: {message}") and option.partition("=")[2].split(", ")[-1].strip("]") in line


def test_citeseer_without_its_files_says_where_to_put_them(shared_data):
    shared_data("Planetoid")
    with pytest.raises(DataNotFoundError, match=r"Planetoid .* is missing CiteSeer/raw/ind.citeseer.x"):
        run("gat_cora", "--trainer.fast_dev_run=true", "--data.name=CiteSeer")


@pytest.mark.slow
def test_neighbourhood_pictures_reach_wandb():
    cli = run("gat", "--trainer.max_epochs=1")
    (log,) = Path(cli.trainer.default_root_dir).glob("wandb/offline-run-*/run-*.wandb")
    (picture,) = log.parent.glob("files/media/images/images/neighbourhood_attention*.png")  # one per validation
    from PIL import Image

    width, height = Image.open(picture).size
    assert height > width  # both attention layers, stacked


def test_sizes_that_do_not_fit_the_graph_fail_when_the_run_starts():
    with pytest.raises(ValueError, match="model.in_channels is 5 but the graph's nodes have 34 features"):
        run("gat", "--trainer.fast_dev_run=true", "--model.in_channels=5")
    with pytest.raises(ValueError, match="task.num_classes is 2 but the graph's labels go up to 3"):
        run("gat", "--trainer.fast_dev_run=true", "--task.num_classes=2")
