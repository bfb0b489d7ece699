"""HAN in the graph domain: it learns on generated authors (and weighs the informative meta-path),
both configs through the command line with their sizes from the data, the forward on every
device, and meta-paths named wrong."""

from __future__ import annotations

import torch

from domains.graph import HANClassifier, HeteroNodeClassification, PlantedAuthors
from domains.graph.data.hetero import strongest
from framework.attention import capture
from framework.__main__ import main
from tests.conftest import ONE_BATCH, accelerator
from tests.image_logger import logged_pictures, readable
from tests.test_bad_inputs import fails

QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
#: A small planted graph: 90 authors in 3 communities, 10 training authors each.
SMALL = dict(num_authors=90, num_papers=150, num_venues=12, num_features=8, train_per_class=10)


def run(config: str, *extra: str):
    return main(["fit", "--config", f"domains/graph/{config}.yaml", *QUIET, *extra])


def small_han(data: PlantedAuthors, **kwargs) -> HANClassifier:
    return HANClassifier(data.in_channels, data.num_classes, metapaths=data.metapaths, hidden_channels=4, heads=2,
                         **kwargs)


def test_han_learns_the_planted_communities_and_weighs_coauthors_over_venues():
    torch.manual_seed(0)
    data = PlantedAuthors(**SMALL)
    data.setup("fit")
    batch = data.split("train")[0]
    model = small_han(data, dropout=0.0, attention_dropout=0.0)
    task = HeteroNodeClassification(data.num_classes)
    task.check(model, data)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(30):
        loss, _ = task.losses(task.run_model(model, batch), task.split(batch)[1])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.75 * losses[0]
    model.eval()
    with capture(model) as maps, torch.no_grad():
        task.run_model(model, batch)
    (semantic,) = [record.weights for record in maps["layers.0"] if not isinstance(record.weights, tuple)]
    assert data.metapaths == ["APA", "AVA"] and semantic[0] > semantic[1]  # co-authors carry the labels, venues are noise


def test_planted_config_runs_with_the_sizes_of_the_data(device):
    cli = run("han", *ONE_BATCH, f"--trainer.accelerator={accelerator(device)}")
    assert "train/loss" in cli.trainer.callback_metrics and "val/acc" in cli.trainer.callback_metrics
    assert (cli.model.model.in_channels, cli.model.model.num_classes, cli.model.task.num_classes) == (16, 3, 3)
    assert "images/metapath_attention" in logged_pictures(cli.trainer)


def test_movielens_config_runs(shared_data):
    shared_data("MovieLens100K")
    cli = run("han_movielens", "--trainer.fast_dev_run=true")
    graph = cli.datamodule.graph
    assert graph["user"].num_nodes == 943 and graph.edge_types == [("user", name, "user") for name in ("UMU", "UOU", "UMGMU")]
    assert (cli.model.model.in_channels, cli.model.model.num_classes, cli.model.task.num_classes) == (42, 4, 4)
    assert cli.trainer.callback_metrics["val/acc"].isfinite()


def test_forward_predictions_and_pictures_follow_the_device(device):
    torch.manual_seed(0)
    data = PlantedAuthors(**SMALL)
    batch = data.split("val")[0].to(device)
    model, task = small_han(data).to(device).eval(), HeteroNodeClassification(data.num_classes)
    logits = task.run_model(model, batch)
    assert logits.device.type == device and logits.shape == (int(batch["author"].val_mask.sum()), 3)
    assert logits.isfinite().all()
    assert torch.equal(task.predict(model, batch)["node"], batch["author"].val_mask.nonzero().flatten())
    (picture,) = task.images(model, batch)["metapath_attention"]
    readable(picture, bars=2)
    semantic = picture.axes[0]
    assert [label.get_text() for label in semantic.get_xticklabels()] == ["APA", "AVA"]
    assert abs(sum(bar.get_height() for bar in semantic.patches) - 1) < 1e-6  # the meta-paths' softmax
    edges = batch["author", "AVA", "author"].edge_index
    weight = torch.ones(edges.shape[1], device=device)
    kept = strongest(edges, weight, batch["author"].num_nodes, 5, seed=0)
    assert kept.device.type == device and torch.bincount(kept[1]).max() == 5
    assert torch.equal(kept.cpu(), strongest(edges.cpu(), weight.cpu(), batch["author"].num_nodes, 5, seed=0))


def test_misnamed_metapaths_and_wrong_sizes_name_the_key_in_one_line(capsys, monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")  # as a user sees it
    fit = ["fit", "--config", "domains/graph/han.yaml", "--trainer.fast_dev_run=true", *QUIET]
    for flags, expected in (
            (["--data.metapaths=[APA,APV]"], "data.metapaths: unknown meta-path 'APV'; PlantedAuthors has APA, AVA"),
            (["--data.metapaths=[APA]", "--model.metapaths=[APA,AVA]"],
             "model.metapaths is ['APA', 'AVA'] but the data has ['APA']: set model.metapaths=['APA']"),
            (["--model.in_channels=5"], "model.in_channels is 5 but the data has 16: set model.in_channels=16")):
        assert fails(capsys, [*fit, *flags]).splitlines()[0] == f"error: {expected}"


def test_the_model_reads_the_meta_paths_the_data_names():
    cli = main(["fit", "--config", "domains/graph/han.yaml", "--trainer.fast_dev_run=true", *QUIET,
                "--data.metapaths=[AVA]"])
    assert cli.model.model.metapaths == ["AVA"] and cli.trainer.global_step == 1
