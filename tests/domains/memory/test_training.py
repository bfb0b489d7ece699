"""Training: the loss falls in a few steps on generated and on real bAbI stories; the MemN2N
configs train without weight decay (every config's run: tests/test_configs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from domains.memory import BabiStories, GeneratedStories, KVMemNN, MemN2N, QuestionAnswering
from framework.__main__ import main
from tests.learning import training_losses


def loss_falls(model, datamodule, tasks, steps=30, lr=0.01):
    torch.manual_seed(0)
    datamodule.setup("fit")
    task = QuestionAnswering(tasks)
    losses = training_losses(model, task, [next(iter(datamodule.train_dataloader()))], steps, lr)
    return losses[0], losses[-1]


@pytest.mark.parametrize("model_class", [MemN2N, KVMemNN])
def test_loss_falls_on_generated_stories(model_class):
    data = GeneratedStories(train_size=64, val_size=8, test_size=8, batch_size=64)
    first, last = loss_falls(model_class(34, dim=16, hops=2), data, [1, 2])
    assert last < 0.5 * first


def test_loss_falls_on_babi(shared_data):
    shared_data("babi/tasks_1-20_v1-2/en")
    first, last = loss_falls(MemN2N(175, dim=16, hops=2, linear_start=True), BabiStories(tasks=1, batch_size=64), [1])
    assert last < 0.5 * first


FAST = [
    "--trainer.fast_dev_run=true",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--config",
    "configs/logger/csv.yaml",
]


@pytest.mark.parametrize("config", ["memn2n", "kvmemnn", "memn2n_babi", "memn2n_babi_joint"])
def test_the_memn2n_configs_train_without_weight_decay(config):
    """The paper trains without weight decay; the configs say so, whatever the optimizer's default."""
    optimizer = yaml.safe_load(Path(f"domains/memory/{config}.yaml").read_text())["optimizer"]
    assert optimizer["init_args"]["weight_decay"] == 0


def test_a_block_of_another_kind_fails_while_parsing(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--config", "domains/memory/memn2n.yaml", *FAST, "--model.attention=mhsa"])
    assert "'mhsa' is a sequence block; this slot takes memory blocks: episodic_memory" in capsys.readouterr().err


LINEAR_START = "--trainer.callbacks+=domains.memory.LinearStart"


@pytest.mark.parametrize(
    "config, options, message",
    [
        ("memn2n", ["--model.tying=rnn"], "model.tying: "),
        ("memn2n", ["--model.random_noise=-0.1"], "model.random_noise: expected a number >= 0, got '-0.1'"),
        ("memn2n", ["--model.hops=0"], "model.hops: expected an int >= 1, got '0'"),
        ("memn2n", ["--data.tasks=[3]"], "data.tasks: "),
        ("memn2n", ["--data.memory_size=0"], "data.memory_size: expected an int >= 1, got '0'"),
        ("memn2n", ["--task.attention_supervision=-0.1"], "task.attention_supervision: expected a number >= 0"),
        (
            "memn2n_babi",
            ["--data.tasks=21"],
            "data.tasks: expected an int in [1, 20] (a bAbI task) or a list, each an int in [1, 20] (a bAbI task), "
            "got '21'",
        ),
        ("memn2n_babi", ["--data.val_fraction=1.5"], "data.val_fraction: expected a number in (0, 1), got '1.5'"),
        ("memn2n_babi", ["--data.similar_lengths=-1"], "data.similar_lengths: expected an int >= 0, got '-1'"),
        ("memn2n", [LINEAR_START, "--trainer.callbacks.patience=-1"], "trainer.callbacks.patience: expected an int"),
        ("memn2n", [LINEAR_START, "--trainer.callbacks.lr_factor=0"], "trainer.callbacks.lr_factor: expected a number"),
        ("ntm_recall", ["--data.min_items=1"], "data.min_items: expected an int >= 2"),
    ],
)
def test_a_value_outside_its_keys_domain_fails_while_parsing_with_the_key(
    capsys, monkeypatch, config, options, message
):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)  # the one-line error a user sees
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--config", f"domains/memory/{config}.yaml", *FAST, *options])
    assert stop.value.code == 2
    line = capsys.readouterr().err.splitlines()[0]
    assert line.startswith(f"error: {message}") and options[-1].partition("=")[2].strip("[]") in line
