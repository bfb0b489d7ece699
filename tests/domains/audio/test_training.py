"""A few optimisation steps lower the loss, on generated events and on real spoken digits."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from domains.audio import CRNN, FSDD, AudioClassification, AudioEvents, Frontend, SpectrogramCNN


def train(model: torch.nn.Module, loader: DataLoader, steps: int, lr: float) -> list[float]:
    task = AudioClassification(10)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    losses: list[float] = []
    while len(losses) < steps:
        for batch in loader:
            loss = task.step(model, batch, "train").loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
    return losses


def frontend() -> Frontend:
    return Frontend(time_masks=0, freq_masks=0)


def test_loss_falls_on_generated_events():
    torch.manual_seed(0)
    data = AudioEvents(train_size=320, val_size=0, test_size=0, batch_size=32)
    model = SpectrogramCNN(10, frontend(), widths=(8, 16, 32), dropout=0.0)
    losses = train(model, data.loader("train", shuffle=True), steps=30, lr=3e-3)
    assert sum(losses[-5:]) / 5 < 0.75 * sum(losses[:5]) / 5, losses


@pytest.mark.slow
def test_loss_falls_on_spoken_digits(shared_data):
    shared_data("fsdd")
    torch.manual_seed(0)
    model = CRNN(10, frontend(), widths=(8, 16), hidden=32, dropout=0.0)
    losses = train(model, FSDD(batch_size=32).loader("train", shuffle=True), steps=30, lr=3e-3)
    assert sum(losses[-5:]) / 5 < 0.75 * sum(losses[:5]) / 5, losses
