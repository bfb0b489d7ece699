"""The "learns for real" tests' loop: a few optimizer steps of a task on fixed batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn


def training_losses(
    model: nn.Module,
    task: Any,
    batches: Sequence[Any],
    steps: int,
    lr: float,
    optimizer: type[torch.optim.Optimizer] = torch.optim.Adam,
) -> list[float]:
    """The training loss of each of ``steps`` steps, cycling through ``batches``."""
    optim = optimizer(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        loss = task.step(model, batches[step % len(batches)], "train").loss
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(float(loss))
    return losses
