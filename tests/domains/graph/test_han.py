"""HAN in the graph domain: it learns on generated authors (and weighs the informative meta-path),
both configs through the command line with their sizes from the data, the forward on every
device, meta-paths named wrong, and the attention-training families on the planted gold meta-path."""

from __future__ import annotations

import math

import pytest
import torch

from domains.graph import HANClassifier, HeteroNodeClassification, PlantedAuthors
from domains.graph.data.hetero import strongest
from framework.__main__ import main
from framework.attention import capture
from framework.errors import ConfigError
from tests.conftest import ONE_BATCH, accelerator
from tests.image_logger import logged_pictures, readable
from tests.test_bad_inputs import fails

QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
#: A small planted graph: 90 authors in 3 communities, 10 training authors each.
SMALL = dict(num_authors=90, num_papers=150, num_venues=12, num_features=8, train_per_class=10)


def run(config: str, *extra: str):
    return main(["fit", "--config", f"domains/graph/{config}.yaml", *QUIET, *extra])


def small_han(data: PlantedAuthors, **kwargs) -> HANClassifier:
    return HANClassifier(
        data.in_channels, data.num_classes, metapaths=data.metapaths, hidden_channels=4, heads=2, **kwargs
    )


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
    assert (
        data.metapaths == ["APA", "AVA"] and semantic[0] > semantic[1]
    )  # co-authors carry the labels, venues are noise


def test_planted_config_runs_with_the_sizes_of_the_data(device):
    cli = run("han", *ONE_BATCH, f"--trainer.accelerator={accelerator(device)}")
    assert "train/loss" in cli.trainer.callback_metrics and "val/acc" in cli.trainer.callback_metrics
    assert (cli.model.model.in_channels, cli.model.model.num_classes, cli.model.task.num_classes) == (16, 3, 3)
    assert "images/metapath_attention" in logged_pictures(cli.trainer)


@pytest.mark.slow
def test_movielens_config_runs(shared_data):
    shared_data("MovieLens100K")
    cli = run("han_movielens", "--trainer.fast_dev_run=true")
    graph = cli.datamodule.graph
    assert graph["user"].num_nodes == 943 and graph.edge_types == [
        ("user", name, "user") for name in ("UMU", "UOU", "UMGMU")
    ]
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
    line = fails(capsys, [*fit, "--data.metapaths=[APA,APV]"], code=2).splitlines()[0]  # refused while parsing
    assert line.startswith("error: data.metapaths: ") and "'APV'" in line
    for flags, expected in (
        (
            ["--data.metapaths=[APA]", "--model.metapaths=[APA,AVA]"],
            "model.metapaths is ['APA', 'AVA'] but the data has ['APA']: set model.metapaths=['APA']",
        ),
        (["--model.in_channels=5"], "model.in_channels is 5 but the data has 16: set model.in_channels=16"),
        (
            ["--data.metapaths=[AVA]", "--task.attention_supervision=1"],
            "task.attention_supervision=1.0 needs meta-path graphs with planted gold meta-paths (domains.graph."
            "PlantedAuthors with APA); PlantedAuthors has none: set them to 0",
        ),
    ):
        assert fails(capsys, [*fit, *flags]).splitlines()[0] == f"error: {expected}"


def test_the_model_reads_the_meta_paths_the_data_names():
    cli = main(
        ["fit", "--config", "domains/graph/han.yaml", "--trainer.fast_dev_run=true", *QUIET, "--data.metapaths=[AVA]"]
    )
    assert cli.model.model.metapaths == ["AVA"] and cli.trainer.global_step == 1


# ------------------------------------------------------------------ the planted gold meta-path and the families


def test_the_planted_graph_marks_the_meta_path_that_carries_the_communities():
    data = PlantedAuthors(**SMALL, metapaths=["AVA", "APA"])
    graph = data.split("train")[0]["author"]
    assert data.gold_evidence and data.gold_metapaths() == ["APA"]
    assert graph.gold.shape == (90, 2) and graph.gold.equal(torch.tensor([[False, True]]).expand(90, 2))
    batch = data.split("train")[0]
    agreement = {}
    for name in ("APA", "AVA"):  # the share of a node's meta-path neighbours (itself left out) in its community
        source, target = batch["author", name, "author"].edge_index
        other = source != target
        agreement[name] = float((graph.y[source[other]] == graph.y[target[other]]).float().mean())
    assert agreement["APA"] > 0.7 and abs(agreement["AVA"] - 1 / 3) < 0.1  # gold: co-authors; venues: chance
    for options in (dict(metapaths=["AVA"]), dict(homophily=0.0)):  # no informative meta-path among the chosen
        plain = PlantedAuthors(**SMALL, **options)
        assert not plain.gold_evidence and "gold" not in plain.split("train")[0]["author"]


def _semantic(model, task, batch):
    with capture(model) as maps:
        logits = task.preds(task.run_model(model, batch))
    (beta,) = [r.weights for r in maps["layers.0"] if not isinstance(r.weights, tuple)]
    return logits, beta


def test_supervision_and_decoupling_train_the_semantic_weights_against_the_gold_meta_path():
    """loss = CE + lambda * -log beta_APA, or CE + mu * -log(1 - beta_APA + 1e-6): beta is the same
    for every scored node; the model never reads the gold."""
    data = PlantedAuthors(**SMALL)
    batch = data.split("train")[0]
    torch.manual_seed(0)
    model = small_han(data, dropout=0.0, attention_dropout=0.0)
    target = batch["author"].y[batch["author"].train_mask]
    supervised = HeteroNodeClassification(3, attention_supervision=2.0)
    decoupled = HeteroNodeClassification(3, decouple_attention=0.5)
    for task in (supervised, decoupled):
        task.check(model, data)
    with torch.no_grad():
        logits, beta = _semantic(model, HeteroNodeClassification(3), batch)
        cross_entropy = float(torch.nn.functional.cross_entropy(logits, target))
        apa = float(beta[0])
        step = supervised.step(model, batch, "train")
        assert float(step.loss) == pytest.approx(cross_entropy - 2.0 * math.log(apa), rel=1e-5)
        assert float(step.logs["attention_loss"]) == pytest.approx(-math.log(apa), rel=1e-5)
        step = decoupled.step(model, batch, "train")
        assert float(step.loss) == pytest.approx(cross_entropy - 0.5 * math.log(1 - apa + 1e-6), rel=1e-5)
        assert float(step.logs["decoupling_loss"]) == pytest.approx(-math.log(1 - apa + 1e-6), rel=1e-5)
    step = supervised.step(model, batch, "train")
    step.loss.backward()
    assert model.layers[0].conv.q.grad.abs().sum() > 0  # the semantic attention learns from it


def test_random_attention_draws_both_levels_and_bad_combinations_are_refused():
    data = PlantedAuthors(**SMALL)
    batch = data.split("val")[0]
    torch.manual_seed(0)
    model = small_han(data).eval()
    task = HeteroNodeClassification(3, random_attention=True)
    task.check(model, data)
    assert model.layers[0].ablation == "random"
    draws = []
    for _ in range(2):
        with capture(model) as maps, torch.no_grad():
            task.run_model(model, batch)
        draws.append(maps["layers.0"])
    for records in draws:
        (edges, alpha), _, beta = (r.weights for r in records)
        reached = torch.bincount(edges[1], minlength=90) > 0  # authors with co-authors (their papers')
        torch.testing.assert_close(
            torch.zeros(90, 2).index_add_(0, edges[1], alpha)[reached], torch.ones(int(reached.sum()), 2)
        )
        torch.testing.assert_close(beta.sum(), torch.tensor(1.0))
    assert not torch.allclose(draws[0][0].weights[1], draws[1][0].weights[1])  # node level, per call
    assert not torch.allclose(draws[0][2].weights, draws[1][2].weights)  # semantic level, per call
    baseline = small_han(data, attention="none")
    with pytest.raises(ConfigError, match="task.random_attention=true needs a model with attention"):
        HeteroNodeClassification(3, random_attention=True).check(baseline, data)
    with pytest.raises(ConfigError, match="needs a model with semantic attention"):
        HeteroNodeClassification(3, decouple_attention=1.0).step(baseline, batch, "train")
    with pytest.raises(ConfigError, match="task.random_attention=true .* takes no"):
        HeteroNodeClassification(3, attention_supervision=1.0, random_attention=True)
