"""The generated long-range matching texts, and the Transformer classifier learning them with the
efficient self-attention blocks."""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F

from domains.nlp import LongRangeMatch, TransformerClassifier
from domains.nlp.data import long_range_text
from tests.conftest import on


def test_a_text_hides_two_key_words_far_apart_and_its_label_says_whether_they_match():
    rng = random.Random(0)
    labels = []
    for length in (8, 64, 301):
        for _ in range(200):
            text, label = long_range_text(rng, length, keys=5, fillers=20)
            words = text.split()
            assert len(words) == length
            keys = [i for i, w in enumerate(words) if w.startswith("k")]
            assert len(keys) == 2, text
            i, j = keys
            assert i < length // 4 and j >= length - length // 4, (i, j, length)
            assert all(w[0] == "w" and 0 <= int(w[1:]) < 20 for k, w in enumerate(words) if k not in (i, j))
            assert label == ("same" if words[i][1:] == words[j][1:] else "different")
            labels.append(label)
    assert 0.45 < labels.count("same") / len(labels) < 0.55


def test_the_data_module_draws_lengths_in_range_and_batches_them():
    data = LongRangeMatch(
        min_length=20, max_length=40, train_size=50, val_size=10, test_size=10, batch_size=50, vocab_size=128
    )
    lengths = [len(text.split()) for text, _ in data.split("train")]
    assert min(lengths) >= 20 and max(lengths) <= 40 and len(set(lengths)) > 5
    assert data.labels() == ["different", "same"]
    batch = next(iter(data.train_dataloader()))
    assert batch["tokens"].shape == (50, max(lengths))
    assert sorted(batch["mask"].sum(1).tolist()) == sorted(lengths)
    again = LongRangeMatch(min_length=20, max_length=40, train_size=50, val_size=10, test_size=10)
    assert again.split("train")[:3] == data.split("train")[:3], "the same seed, the same texts"
    with pytest.raises(ValueError, match="data.min_length must be at most data.max_length=40, got 50"):
        LongRangeMatch(min_length=50, max_length=40)


@pytest.mark.parametrize("attention", ["transformer_xl", "performer"])
def test_the_classifier_learns_long_texts_with_an_efficient_block(attention, device):
    """A few steps on one batch of texts of 64 words or more: the loss falls (the block trains end to end)."""
    torch.manual_seed(0)
    data = LongRangeMatch(
        min_length=64, max_length=72, train_size=8, val_size=1, test_size=1, batch_size=8, vocab_size=128
    )
    batch = next(iter(data.train_dataloader()))
    model = TransformerClassifier(128, 2, dim=16, depth=1, attention=attention, max_len=72, dropout=0.0)
    model, batch = on(device, model, batch)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        loss = F.cross_entropy(model(batch["tokens"], batch["mask"]), batch["target"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
