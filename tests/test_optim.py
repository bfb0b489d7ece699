"""Weight decay on weight matrices only (framework/optim.py): the groups of a small model, what
AdamW then does to a norm layer's scale and to a matrix, and the switch on the command line."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from framework.commands.fit import FrameworkCLI
from framework.layers.positions import PositionalEncoding
from framework.optim import offered_in_groups, parameter_groups
from framework.task_module import TaskModule
from framework.tasks.classification import Classification


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(7, 4)
        self.conv = nn.Conv1d(4, 4, 3, padding=1)
        self.batch_norm = nn.BatchNorm1d(4)
        self.norm = nn.LayerNorm(4)
        self.linear = nn.Linear(4, 3)
        self.position = nn.Parameter(torch.zeros(5, 4))  # a learned table, opted out below
        self.gate = nn.Parameter(torch.ones(4))
        self.head_bias = nn.Parameter(torch.zeros(2, 1, 4))  # a bias per head: a matrix, but a bias
        self.learned = PositionalEncoding(4, 6, learned=True)

    def no_weight_decay(self) -> set[str]:
        return {"posit*"}


def names(module: nn.Module, group: dict) -> set[str]:
    ids = {id(p) for p in group["params"]}
    return {name for name, p in module.named_parameters() if id(p) in ids}


def test_only_matrices_and_kernels_are_decayed():
    model = Small()
    decayed, spared = parameter_groups(model)
    assert names(model, decayed) == {"conv.weight", "linear.weight"} and "weight_decay" not in decayed
    assert names(model, spared) == {
        "embedding.weight",
        "conv.bias",
        "batch_norm.weight",
        "batch_norm.bias",
        "norm.weight",
        "norm.bias",
        "linear.bias",
        "position",
        "gate",
        "head_bias",
        "learned.table",
    }
    assert spared["weight_decay"] == 0.0
    everything = parameter_groups(model, "all")
    assert [id(p) for p in everything] == [id(p) for p in model.parameters()]
    tied = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
    tied[1].weight = tied[0].weight  # an output layer tied to the embedding: one parameter, spared
    assert [len(g["params"]) for g in parameter_groups(tied)] == [1] and parameter_groups(tied)[0]["weight_decay"] == 0
    with pytest.raises(ValueError, match="weight_decay_on must be 'matrices' or 'all', got 'some'"):
        parameter_groups(model, "some")


@pytest.mark.parametrize("decay_on", ["matrices", "all"])
def test_adamw_leaves_a_norm_scale_without_gradient_alone_and_shrinks_a_matrix(decay_on):
    model = nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3))
    torch.nn.init.constant_(model[1].weight, 2.0)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.AdamW(parameter_groups(model, decay_on), lr=0.1, weight_decay=0.5)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)  # Adam's step is 0: only the decay moves a weight, p <- p (1 - lr wd)
    optimizer.step()
    assert torch.equal(model[0].weight, before["0.weight"] * (1 - 0.1 * 0.5))
    scale = before["1.weight"] * (1 - 0.1 * 0.5) if decay_on == "all" else before["1.weight"]
    assert torch.equal(model[1].weight, scale)


def test_the_default_optimizer_decays_matrices_only():
    module = TaskModule(nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2)), Classification(num_classes=2))
    optimizer = module.configure_optimizers()
    assert type(optimizer) is torch.optim.AdamW and optimizer.defaults["weight_decay"] == 0.01
    assert [(len(g["params"]), g["weight_decay"]) for g in optimizer.param_groups] == [(2, 0.01), (4, 0.0)]
    module.weight_decay_on = "all"
    assert [(len(g["params"]), g["weight_decay"]) for g in module.configure_optimizers().param_groups] == [(6, 0.01)]


def test_offering_groups_leaves_the_module_as_it_was():
    model = Small()
    with offered_in_groups(model, "matrices", {"class_path": "torch.optim.SGD", "init_args": {"weight_decay": 0.1}}):
        assert [len(g["params"]) for g in model.parameters()] == [2, 11]
    assert len(list(model.parameters())) == 13 and "parameters" not in vars(model)
    with offered_in_groups(model, "matrices", {"class_path": "torch.optim.LBFGS", "init_args": {"lr": 1}}):
        assert len(list(model.parameters())) == 13  # no weight_decay argument: LBFGS takes one group only


SMALL = ["--config", "domains/demo/demo.yaml", "--data.train_size=64", "--data.val_size=16", "--data.test_size=16"]


def optimizer_of(*flags: str) -> torch.optim.Optimizer:
    built = FrameworkCLI([*SMALL, *flags], run=False).model.configure_optimizers()
    return built[0][0] if isinstance(built, tuple) else built


@pytest.mark.slow
def test_the_command_line_switch_and_a_named_optimizer():
    groups = lambda optimizer: [(len(g["params"]), g["weight_decay"]) for g in optimizer.param_groups]  # noqa: E731
    default = optimizer_of()  # the demo names AdamW with weight_decay 0.01
    decayed, spared = groups(default)
    assert decayed[1] == 0.01 and spared[1] == 0.0
    assert groups(optimizer_of("--weight_decay_on=all")) == [(decayed[0] + spared[0], 0.01)]
    sgd = optimizer_of(
        "--optimizer=torch.optim.SGD",
        "--optimizer.lr=0.1",
        "--optimizer.weight_decay=0.1",
        "--lr_scheduler=torch.optim.lr_scheduler.StepLR",
        "--lr_scheduler.step_size=1",
    )
    assert type(sgd) is torch.optim.SGD and groups(sgd) == [(decayed[0], 0.1), (spared[0], 0.0)]
    assert len(optimizer_of("--optimizer=torch.optim.LBFGS").param_groups) == 1


def test_a_wrong_switch_value_names_the_key(capsys, monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")
    with pytest.raises(SystemExit):
        FrameworkCLI([*SMALL, "--weight_decay_on=biases"], run=False)
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "weight_decay_on" in err and "Traceback" not in err


def test_class_tokens_are_not_decayed():
    from domains.nlp.models.transformer_cls import TransformerClassifier
    from domains.vision.models.vit import ViTClassifier

    for model in (
        TransformerClassifier(vocab_size=50, num_classes=3, dim=16, readout="cls"),
        ViTClassifier(num_classes=3, image_size=8, patch_size=4, dim=16, depth=1),
    ):
        spared = {
            id(p) for group in parameter_groups(model) if group.get("weight_decay") == 0.0 for p in group["params"]
        }
        assert id(model.cls) in spared, type(model).__name__
