"""Vision models learn: a few steps on the digit scenes and on the digits, and every config runs
end to end through the command line (fast_dev_run), real-data ones on ../shared/data/CamVid."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from domains.vision.data import DigitScenes, Digits
from domains.vision.models import AttentionResNet, SegmentationNet
from domains.vision.task import Segmentation
from framework.__main__ import main
from framework.tasks import Classification
from tests.conftest import ONE_BATCH, accelerator
from tests.image_logger import logged_pictures
from tests.learning import training_losses

CONFIGS = sorted(Path("domains/vision").glob("*.yaml"))
QUICK = ["--trainer.fast_dev_run=true", "--trainer.logger=false", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false"]


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


@pytest.mark.parametrize("config", [c for c in CONFIGS if "camvid" not in c.name], ids=lambda c: c.stem)
def test_config_runs_on_embedded_data(config, device):
    scenes = _data_class(config).endswith("DigitScenes")
    small = ["--data.train_size=32", "--data.val_size=16", "--data.test_size=16"] if scenes else []
    cli = main(["fit", "--config", str(config), *QUICK, *small,
                *ONE_BATCH, f"--trainer.accelerator={accelerator(device)}"])
    assert cli.trainer.state.finished
    pictures = logged_pictures(cli.trainer)
    assert ("images/masks" in pictures) == scenes
    if scenes and "fcn" not in config.stem:
        assert any(key.startswith("images/pixel_attention/") for key in pictures)


@pytest.mark.parametrize("config", [c for c in CONFIGS if "camvid" in c.name], ids=lambda c: c.stem)
def test_camvid_config_runs_on_the_real_data(config, shared_data):
    shared_data("CamVid")
    cli = main(["fit", "--config", str(config), *QUICK, "--data.max_images=4", "--data.batch_size=2"])
    assert cli.trainer.state.finished and set(cli.trainer.callback_metrics) >= {"val/miou", "val/pixel_acc"}


def _data_class(config: Path) -> str:
    """The data class_path of a config, following a data section kept in its own file."""
    data = yaml.safe_load(config.read_text())["data"]
    return (yaml.safe_load((config.parent / data).read_text()) if isinstance(data, str) else data)["class_path"]
