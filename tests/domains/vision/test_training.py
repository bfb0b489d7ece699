"""Vision models learn: a few steps on the digit scenes and on the digits (every config's run:
tests/test_configs.py)."""

from __future__ import annotations

import pytest
import torch

from domains.vision.data import Digits, DigitScenes
from domains.vision.models import AttentionResNet, SegmentationNet
from domains.vision.task import Segmentation
from framework.tasks import Classification
from tests.learning import training_losses

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end


def test_ccnet_learns_the_digit_scenes():
    torch.manual_seed(0)
    data = DigitScenes(train_size=64, val_size=8, test_size=8, batch_size=16)
    data.setup("fit")
    batches = list(data.train_dataloader())
    model = SegmentationNet(11, attention="criss_cross", backbone="resnet18", channels=(16, 32, 64, 128), stem_width=16)
    losses = training_losses(model, Segmentation(11), batches, steps=24, lr=3e-3, optimizer=torch.optim.AdamW)
    assert sum(losses[-4:]) < 0.6 * sum(losses[:4]), losses


def test_an_se_resnet_learns_the_digits():
    torch.manual_seed(0)
    data = Digits(image_size=16, batch_size=64)
    data.setup("fit")
    batches = list(data.train_dataloader())[:4]
    model = AttentionResNet(10, attention="se", in_chans=1, channels=(8, 16, 32, 64), stem_width=8, small_input=True)
    losses = training_losses(model, Classification(10), batches, steps=32, lr=3e-3, optimizer=torch.optim.AdamW)
    assert sum(losses[-4:]) < 0.6 * sum(losses[:4]), losses
