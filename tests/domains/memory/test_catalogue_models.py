"""Catalogue II's memory models: the dynamic memory network on stories, the neural Turing machine
and the Hopfield reader on associative recall of bit vectors. Each learns in a few steps, answers
the same whatever the padding, runs the same on every device, and the DMN takes its vocabulary
from the data (every config's run: tests/test_configs.py)."""

from __future__ import annotations

import pytest
import torch

from domains.memory import (
    DMN,
    NTM,
    AssociativeRecallBits,
    BitSequences,
    GeneratedStories,
    HopfieldReader,
    QuestionAnswering,
)
from domains.memory.data import RecallSequences
from framework.__main__ import main
from tests.conftest import on

FAST = [
    "--trainer.fast_dev_run=true",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--config",
    "configs/logger/csv.yaml",
]

BITS, ITEM = 4, 2  # tiny recall examples: 4 bits, items of 2 vectors


def stories(size: int = 32) -> dict[str, torch.Tensor]:
    data = GeneratedStories(train_size=size, val_size=8, test_size=8, batch_size=size)
    data.setup("fit")
    return next(iter(data.train_dataloader()))


def recall(size: int = 32, max_items: int = 4) -> dict[str, torch.Tensor]:
    data = AssociativeRecallBits(
        bits=BITS, item_length=ITEM, max_items=max_items, train_size=size, val_size=8, test_size=8, batch_size=size
    )
    data.setup("fit")
    return next(iter(data.train_dataloader()))


def dmn() -> DMN:
    return DMN(34, dim=16, passes=2, dropout=0.0)


def ntm(**kw) -> NTM:
    return NTM(BITS + 2, BITS, ITEM, hidden=24, memory_slots=12, memory_width=8, **kw)


def hopfield(**kw) -> HopfieldReader:
    return HopfieldReader(BITS + 2, BITS, ITEM, hidden=24, context=2 * (ITEM + 1), **kw)


MODELS = {
    "dmn": (dmn, stories, QuestionAnswering([1, 2])),
    "ntm": (ntm, recall, BitSequences()),
    "hopfield": (hopfield, recall, BitSequences()),
}
#: Batch size and learning rate of the learning test: the NTM learns its bits slowest, so it fits fewer.
LEARNING = {"dmn": (32, 0.01), "ntm": (8, 0.02), "hopfield": (16, 0.01)}


def inputs(name: str, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    return (batch["story"], batch["question"]) if name == "dmn" else (batch["inputs"], batch["mask"])


@pytest.mark.parametrize("name", MODELS)
def test_loss_falls(name):
    """30 Adam steps on one batch of generated examples take a third off the loss."""
    make, data, task = MODELS[name]
    size, lr = LEARNING[name]
    torch.manual_seed(0)
    model, batch = make(), data(size)
    optimizer = torch.optim.Adam(model.parameters(), lr)
    losses = []
    for _ in range(30):
        loss = task.step(model, batch, "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.7 * losses[0]


def test_recall_examples_answer_the_item_after_the_asked_one():
    """Decoded from the steps alone: the items behind item delimiters, the query between two query
    delimiters, the target the item that follows the queried one."""
    data = RecallSequences(64, BITS, ITEM, 2, 5, seed=3)
    for x, mask, target in zip(data.inputs, data.mask, data.target):
        steps = x[mask]
        assert not x[~mask].any() and steps[-1, BITS + 1] == 1
        starts = steps[:, BITS].nonzero().flatten().tolist()
        query = steps[:, BITS + 1].nonzero().flatten().tolist()
        assert len(query) == 2 and query[1] - query[0] == ITEM + 1 and 2 <= len(starts) <= 5
        items = [steps[s + 1 : s + 1 + ITEM, :BITS] for s in starts]
        asked = [i for i, item in enumerate(items[:-1]) if torch.equal(item, steps[query[0] + 1 : query[1], :BITS])]
        assert any(torch.equal(items[i + 1], target) for i in asked)


def repadded(name: str, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The batch with more padding: three empty sentences, or five zero steps."""
    if name == "dmn":
        story = batch["story"]
        return {**batch, "story": torch.cat([story, story.new_zeros(len(story), 3, story.shape[2])], 1)}
    steps = batch["inputs"]
    return {
        **batch,
        "inputs": torch.cat([steps, steps.new_zeros(len(steps), 5, steps.shape[2])], 1),
        "mask": torch.cat([batch["mask"], batch["mask"].new_zeros(len(steps), 5)], 1),
    }


@pytest.mark.parametrize("name", MODELS)
def test_padding_changes_no_answer(name):
    """The answers and the weights are read at each example's real positions (its last sentence
    or step, its answer steps), so padding moves nothing."""
    make, data, _ = MODELS[name]
    torch.manual_seed(0)
    model, batch = make().eval(), data(8)
    logits, weights = model(*inputs(name, batch), need_weights=True)
    logits_padded, weights_padded = model(*inputs(name, repadded(name, batch)), need_weights=True)
    torch.testing.assert_close(logits_padded, logits)
    if name == "ntm":  # steps: the real ones, padding, then the answer's: compare the real ones
        real = batch["inputs"].shape[1]
        torch.testing.assert_close(weights_padded[:, :, :real], weights[:, :, :real])
    else:  # over sentences or steps: the padding gets nothing
        torch.testing.assert_close(weights_padded[..., : weights.shape[-1]], weights)
        assert not weights_padded[..., weights.shape[-1] :].any()


def test_weights_are_distributions_over_the_real_items():
    torch.manual_seed(0)
    story_batch, recall_batch = stories(8), recall(8)
    _, gates = dmn().eval()(story_batch["story"], story_batch["question"], need_weights=True)
    sentences = story_batch["story"].ne(0).any(-1)
    assert gates.shape == (8, 2, story_batch["story"].shape[1]) and not gates.transpose(1, 2)[~sentences].any()
    torch.testing.assert_close(gates.sum(-1), torch.ones(8, 2))
    steps = recall_batch["inputs"].shape[1]
    _, heads = ntm(read_heads=2).eval()(recall_batch["inputs"], recall_batch["mask"], need_weights=True)
    assert heads.shape == (8, 3, steps + ITEM, 12)
    torch.testing.assert_close(heads.sum(-1), torch.ones(8, 3, steps + ITEM))
    _, retrieval = hopfield(num_heads=2).eval()(recall_batch["inputs"], recall_batch["mask"], need_weights=True)
    assert retrieval.shape == (8, 2, 1, steps) and not retrieval[:, :, 0].transpose(1, 2)[~recall_batch["mask"]].any()
    torch.testing.assert_close(retrieval.sum(-1), torch.ones(8, 2, 1))


@pytest.mark.parametrize("name", ["ntm", "hopfield"])
def test_without_memory_the_models_answer_and_weigh_nothing(name):
    _, data, _ = MODELS[name]
    batch = data(4)
    logits, weights = MODELS[name][0](attention="none")(batch["inputs"], batch["mask"], need_weights=True)
    assert logits.shape == (4, ITEM, BITS) and weights is None


@pytest.mark.parametrize("name", MODELS)
def test_forward_on_device_matches_the_cpu(name, device):
    """Every tensor a model makes follows its inputs onto the device (no index built on the CPU)."""
    make, data, _ = MODELS[name]
    torch.manual_seed(0)
    model, batch = make().eval(), data(8)
    logits, weights = model(*inputs(name, batch), need_weights=True)
    moved, moved_batch = on(device, model, batch)
    logits_on, weights_on = moved(*inputs(name, moved_batch), need_weights=True)
    assert logits_on.device.type == weights_on.device.type == device
    torch.testing.assert_close(logits_on.cpu(), logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(weights_on.cpu(), weights, atol=1e-4, rtol=1e-4)


@pytest.mark.slow
def test_dmn_takes_the_vocabulary_of_the_data():
    with pytest.raises(ValueError, match="model.vocab_size is not set"):
        DMN()
    cli = main(
        [
            "fit",
            "--config",
            "domains/memory/dmn.yaml",
            *FAST,
            "--data.train_size=32",
            "--data.val_size=8",
            "--data.test_size=8",
            "--model.dim=8",
        ]
    )
    assert cli.model.model.vocab_size == cli.datamodule.vocab_size == 34
