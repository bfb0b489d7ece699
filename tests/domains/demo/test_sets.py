"""The demo's set task: generated multisets whose distinct elements are counted, the Set
Transformer classifier (and its rFF + mean baseline) learning them, its invariance to the order of
a set's elements and to padding, and ``sets.yaml`` through the command line."""

from __future__ import annotations

import pytest
import torch

from domains.demo import SetClassifier, UniqueCount, UniqueCountDataset
from framework.__main__ import main
from framework.tasks import Classification
from tests.conftest import accelerator, on

#: The Set Transformer with either encoder block, and the paper's baseline (rFF layers, masked mean).
VARIANTS = [("sab", "pma"), ("isab", "pma"), ("none", "none")]


def test_sets_hold_their_count_of_distinct_tokens_and_the_module_states_its_sizes():
    data = UniqueCountDataset(500, num_tokens=30, min_size=3, max_size=9, max_unique=6, seed=0)
    sizes = data.mask.sum(1)
    assert data.mask.equal(torch.arange(9) < sizes.unsqueeze(1))  # real elements first, then padding
    assert 3 <= sizes.min() and sizes.max() == 9
    assert (data.tokens[~data.mask] == 30).all() and (data.tokens[data.mask] < 30).all()
    counts = torch.tensor([len(set(row[keep].tolist())) for row, keep in zip(data.tokens, data.mask)])
    assert counts.equal(data.target + 1) and set(counts.tolist()) == set(range(1, 7))
    assert (counts <= sizes).all()
    module = UniqueCount(num_tokens=30, max_size=9, max_unique=6)
    assert (module.vocab_size, module.num_classes) == (31, 6)
    with pytest.raises(ValueError, match="data.max_unique"):
        UniqueCount(num_tokens=30, max_size=9, max_unique=10)


def test_unset_sizes_are_named():
    with pytest.raises(ValueError, match="model.num_classes is not set"):
        SetClassifier(vocab_size=31)


@pytest.mark.parametrize("attention,pooling", VARIANTS)
def test_output_ignores_the_order_of_a_sets_elements_and_its_padding(attention, pooling, device):
    torch.manual_seed(0)
    data = UniqueCountDataset(16, num_tokens=30, min_size=2, max_size=8, max_unique=5, seed=1)
    model = on(device, SetClassifier(31, 5, dim=16, depth=2, attention=attention, pooling=pooling).eval())
    tokens, mask = on(device, data.tokens, data.mask)
    with torch.no_grad():
        expected = model(tokens, mask)
        # Each set's slots shuffled (its elements and padding interleaved), four more padding slots
        # appended, and every padding slot given a real token: the logits must not move.
        order = torch.rand(16, 8, device=device).argsort(1)
        shuffled, kept = tokens.gather(1, order), mask.gather(1, order)
        padded = torch.cat([shuffled, torch.full((16, 4), 30, device=device)], 1)
        kept = torch.cat([kept, torch.zeros(16, 4, dtype=torch.bool, device=device)], 1)
        padded = torch.where(kept, padded, torch.randint(30, padded.shape, device=device))
        torch.testing.assert_close(model(padded, kept), expected, atol=1e-5, rtol=1e-4)
        # Against that, one element of every set changed: the logits move.
        changed = tokens.clone()
        changed[:, 0] = (changed[:, 0] + 1) % 30
        assert not torch.allclose(model(changed, mask), expected, atol=1e-3)


@pytest.mark.parametrize("attention,pooling", VARIANTS)
def test_loss_falls_in_a_few_steps(attention, pooling, device):
    torch.manual_seed(0)
    data = UniqueCount(
        num_tokens=30, min_size=4, max_size=8, max_unique=4, train_size=64, val_size=8, test_size=8, batch_size=64
    )
    data.setup("fit")
    batch = on(device, next(iter(data.train_dataloader())))
    model = on(
        device, SetClassifier(data.vocab_size, data.num_classes, dim=32, depth=2, attention=attention, pooling=pooling)
    )
    task = Classification(data.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), 0.003)
    losses = []
    for _ in range(30):
        loss = task.step(model, batch, "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    assert sum(losses[-5:]) < 0.5 * sum(losses[:5]), losses


@pytest.mark.parametrize("flags", [[], ["--model.attention=none", "--model.pooling=none"]], ids=["pma", "baseline"])
@pytest.mark.slow
def test_config_runs_with_the_sizes_the_data_states(flags, device):
    cli = main(
        [
            "fit",
            "--config",
            "domains/demo/sets.yaml",
            "--config",
            "configs/logger/csv.yaml",
            *flags,
            "--data.train_size=64",
            "--data.val_size=16",
            "--data.test_size=16",
            "--data.batch_size=16",
            "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=2",
            "--trainer.enable_progress_bar=false",
            "--trainer.enable_model_summary=false",
            f"--trainer.accelerator={accelerator(device)}",
        ]
    )
    model, task = cli.model.model, cli.model.task
    assert (model.vocab_size, model.num_classes, task.num_classes) == (101, 5, 5)  # from UniqueCount, not the config
    assert type(model.pool).__name__ == ("MeanPooling" if flags else "PoolingByMultiheadAttention")
    assert {"train/loss", "val/loss", "val/acc"} <= set(cli.trainer.callback_metrics)
