"""The audio domain's evaluation hooks: the frames the pooling over time weighs."""

from __future__ import annotations

import pytest
import torch

from domains.audio import CRNN, AudioClassification, SpectrogramCNN, SpectrogramTransformer
from domains.audio.data import AudioEvents


@pytest.mark.parametrize("make", [lambda: SpectrogramTransformer(10), lambda: CRNN(10)], ids=["transformer", "crnn"])
def test_frames_of_the_pooling_are_the_items(make):
    data = AudioEvents(train_size=4, val_size=4, test_size=4, batch_size=4)
    data.setup("test")
    batch = next(iter(data.test_dataloader()))
    model, task = make().eval(), AudioClassification(10)
    items = task.item_attention(model, batch)
    assert items.blocks == ("pool",) and torch.allclose(items.weights.sum(-1), torch.ones(4), atol=1e-5)
    forward = task.item_forward(model, batch)
    assert forward.vectors.shape[:2] == items.weights.shape
    logits = task.decision(model, batch)
    assert torch.allclose(forward.forward(forward.vectors), logits, atol=1e-5)
    assert torch.allclose(forward.forward(torch.cat([forward.vectors] * 2)), logits.repeat(2, 1), atol=1e-5)
    assert task.item_attention(SpectrogramCNN(10), batch) is None
