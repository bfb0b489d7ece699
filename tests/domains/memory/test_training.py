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
    assert "unknown memory block 'mhsa'" in capsys.readouterr().err
