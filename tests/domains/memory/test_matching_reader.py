"""The matching reader: stories as one word sequence, every co-attention block as its matching,
weights per sentence for the pictures, and the block chosen on the command line (every config's
run: tests/test_configs.py)."""

from __future__ import annotations

import pytest
import torch

from domains.memory import GeneratedStories, MatchingReader, QuestionAnswering
from domains.memory.models.matching import STORY_WEIGHTS, compact
from framework.__main__ import main

FAST = [
    "--trainer.fast_dev_run=true",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--config",
    "configs/logger/csv.yaml",
]


def test_compact_puts_the_real_words_first_in_reading_order():
    story = torch.tensor([[[5, 6, 0], [7, 0, 0], [0, 0, 0]], [[8, 0, 0], [9, 10, 11], [12, 0, 0]]])
    words, mask, sentence = compact(story)
    assert words.tolist() == [[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]]
    assert mask.tolist() == [[True, True, True, False, False], [True] * 5]
    assert sentence.tolist() == [[0, 0, 1, 0, 0], [0, 1, 1, 1, 2]]


def _batch(size: int = 32):
    data = GeneratedStories(train_size=size, val_size=8, test_size=8, batch_size=size)
    data.setup("fit")
    return next(iter(data.train_dataloader()))


def test_loss_falls_with_attention_over_attention():
    torch.manual_seed(0)
    batch = _batch()
    model, task = MatchingReader(34, dim=16, embed_dim=16), QuestionAnswering([1, 2])
    optimizer = torch.optim.Adam(model.parameters(), 0.01)
    losses = []
    for _ in range(25):
        loss = task.step(model, batch, "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    assert losses[-1] < 0.6 * losses[0]


@pytest.mark.parametrize("matching", [*STORY_WEIGHTS, "none"])
def test_every_matching_block_answers_and_weighs_the_sentences(matching):
    torch.manual_seed(0)
    batch = _batch(4)
    model = MatchingReader(34, dim=8, embed_dim=8, matching=matching).eval()
    logits = model(batch["story"], batch["question"])
    assert logits.shape == (4, 34)
    logits_too, weights = model(batch["story"], batch["question"], need_weights=True)
    torch.testing.assert_close(logits_too, logits)
    if matching == "none":
        assert weights is None
        return
    sentences = batch["story"].ne(0).any(-1)
    assert weights.shape == (4, 1, batch["story"].shape[1]) and not weights[:, 0][~sentences].any()
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 1))


def test_a_matching_block_without_the_co_attention_signature_is_refused():
    with pytest.raises(ValueError, match="model.matching must be a co-attention block"):
        MatchingReader(34, matching="additive")


def test_the_matching_block_is_chosen_on_the_command_line():
    cli = main(
        [
            "fit",
            "--config",
            "domains/memory/reader.yaml",
            *FAST,
            "--data.train_size=64",
            "--data.val_size=16",
            "--data.test_size=16",
            "--model.matching=multi_grained_co_attention",
        ]
    )
    assert type(cli.model.model.matching).__name__ == "MultiGrainedCoAttention"
    assert {"val/acc", "val/error_task1", "val/error_task2"} <= set(cli.trainer.callback_metrics)
