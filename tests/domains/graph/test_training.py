"""Learning: a few full-batch steps on Cora lower the training loss, for every graph block."""

from __future__ import annotations

import pytest
import torch

from domains.graph import NodeClassification, NodeClassifier, PlanetoidData


@pytest.fixture
def cora_batch(shared_data):
    shared_data("Planetoid")
    data = PlanetoidData()
    data.prepare_data()
    data.setup("fit")
    (batch,) = list(data.train_dataloader())
    return batch


@pytest.mark.parametrize("attention", ["gat", "gatv2", "none"])
def test_loss_falls_on_cora_in_a_few_full_batch_steps(attention, cora_batch):
    torch.manual_seed(0)
    model, task = NodeClassifier(1433, 7, attention=attention), NodeClassification(7)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
    losses = []
    for _ in range(10):
        loss = task.step(model, cora_batch, "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
