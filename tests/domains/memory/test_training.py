"""Training: the loss falls in a few steps on generated and on real bAbI stories, and every
config of the domain runs through the command line (fast_dev_run)."""

from __future__ import annotations

import pytest
import torch

from domains.memory import BabiStories, GeneratedStories, KVMemNN, MemN2N, QuestionAnswering
from framework.__main__ import main
from tests.conftest import ONE_BATCH, accelerator
from tests.image_logger import logged_pictures
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


FAST = ["--trainer.fast_dev_run=true", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
        "--config", "configs/logger/csv.yaml"]


@pytest.mark.parametrize("config", ["memn2n", "kvmemnn"])
def test_embedded_configs_run(config, device):
    cli = main(["fit", "--config", f"domains/memory/{config}.yaml", *FAST, "--data.train_size=64",
                "--data.val_size=16", "--data.test_size=16",
                *ONE_BATCH, f"--trainer.accelerator={accelerator(device)}"])
    assert "images/memory_hops" in logged_pictures(cli.trainer)
    metrics = cli.trainer.callback_metrics
    assert {"val/acc", "val/error", "val/mean_error", "val/error_task1", "val/error_task2"} <= set(metrics)
    assert no_weight_decay(cli)


def no_weight_decay(cli):
    """The paper trains without weight decay; the configs say so."""
    return all(group["weight_decay"] == 0 for optimizer in cli.trainer.optimizers for group in optimizer.param_groups)


@pytest.mark.parametrize("config", ["memn2n_babi", "memn2n_babi_joint"])
def test_babi_configs_run(config, shared_data):
    shared_data("babi/tasks_1-20_v1-2/en")
    cli = main(["fit", "--config", f"domains/memory/{config}.yaml", *FAST])
    assert "val/error_task1" in cli.trainer.callback_metrics and no_weight_decay(cli)


def test_a_block_of_another_kind_fails_while_parsing(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--config", "domains/memory/memn2n.yaml", *FAST, "--model.attention=mhsa"])
    assert "unknown memory block 'mhsa'" in capsys.readouterr().err
