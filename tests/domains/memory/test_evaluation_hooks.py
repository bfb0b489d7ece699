"""The memory domain's evaluation hooks: story sentences as items, supporting facts as gold per
hop and task, and strong supervision of the hops."""

from __future__ import annotations

import pytest
import torch

from domains.memory import DMN, KVMemNN, MatchingReader, MemN2N, QuestionAnswering
from domains.memory.data import GeneratedStories
from framework.attention import AttentionBlock


@pytest.fixture(scope="module")
def batch():
    data = GeneratedStories(train_size=8, val_size=8, test_size=16, batch_size=16)
    data.setup("test")
    return next(iter(data.test_dataloader()))


def test_sentences_are_the_items(batch):
    model, task = MemN2N(34, random_noise=0.0).eval(), QuestionAnswering()
    items = task.item_attention(model, batch)
    valid = batch["story"].ne(0).any(-1)
    assert items.blocks == ("read",) and torch.equal(items.valid, valid)
    assert torch.allclose(items.weights.sum(-1), torch.ones(len(valid))) and not items.weights[~valid].any()
    erased = torch.zeros_like(valid)
    erased[:, 0] = True
    emptied = task.erase_items(batch, erased)["story"]
    assert not emptied[:, 0].any() and torch.equal(emptied[:, 1:], batch["story"][:, 1:])
    forward = task.item_forward(model, batch)
    logits = task.decision(model, batch)
    assert forward.vectors.shape[:2] == valid.shape
    assert torch.allclose(forward.forward(forward.vectors), logits, atol=1e-5)
    assert torch.allclose(forward.forward(torch.cat([forward.vectors] * 2)), logits.repeat(2, 1), atol=1e-5)
    assert torch.equal(task.gold_attention(batch), batch["support"])


MODELS = {
    "memn2n": lambda: MemN2N(34, random_noise=0.0),
    "kvmemnn": lambda: KVMemNN(34, dim=16),
    "dmn": lambda: DMN(34, dim=16, passes=2, dropout=0.0),
    "reader": lambda: MatchingReader(34, dim=16, embed_dim=16),
}


@pytest.mark.parametrize("name", MODELS)
def test_every_model_that_returns_weights_over_the_sentences_gives_its_item_attention(name, batch):
    model, task = MODELS[name]().eval(), QuestionAnswering()
    items = task.item_attention(model, batch)
    valid = batch["story"].ne(0).any(-1)
    assert items is not None and items.blocks, name
    assert all(isinstance(model.get_submodule(block), AttentionBlock) for block in items.blocks), items.blocks
    assert torch.allclose(items.weights.sum(-1), torch.ones(len(valid)), atol=1e-5) and not items.weights[~valid].any()


def test_gold_views_are_the_hops_against_the_supporting_facts_per_task(batch):
    model, task = MemN2N(34, hops=3, random_noise=0.0).eval(), QuestionAnswering()
    views = task.gold_views(model, batch)
    assert [v.name for v in views] == ["hop1", "hop2", "hop3"]
    _, weights = model(batch["story"], batch["question"], need_weights=True)
    for k, view in enumerate(views):
        assert torch.equal(view.weights[:, 0], weights[:, k]) and torch.equal(view.gold[:, 0], batch["support"])
        assert torch.equal(view.group, batch["task"]) and view.group_name == "task"
    assert task.gold_views(MemN2N(34, attention="none"), batch) == []
    assert task.item_attention(MemN2N(34, attention="none"), batch) is None


def test_strong_supervision_adds_the_hops_cross_entropy(batch):
    model, task = MemN2N(34, random_noise=0.0), QuestionAnswering(attention_supervision=2.0)
    step = task.step(model, batch, "train")
    plain = QuestionAnswering().step(model, batch, "train")
    assert set(step.logs) == {"attention_loss"}
    assert float(step.loss.detach()) == pytest.approx(
        float(plain.loss.detach()) + 2.0 * float(step.logs["attention_loss"]), rel=1e-5
    )
    model.linear_start = True  # no softmax yet: no supervision
    assert QuestionAnswering(attention_supervision=2.0).step(model, batch, "train").logs is None
