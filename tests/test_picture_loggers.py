"""Loggers that take no images of their own get the pictures all the same: CSV as PNG files in the run
folder, TensorBoard (the ``configs/logger/tensorboard.yaml`` preset) as images in its event file."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest
import torch
from PIL import Image

from domains.demo import AssociativeRecall, SequenceClassification, SequenceClassifier
from framework.loggers import CSVLogger, TensorBoardLogger, picture_file
from tests.image_logger import fit_logging_pictures

KEY = "attention/encoder.layers.0.attention"


def fit(logger, root, epochs: int = 2):
    torch.manual_seed(0)
    data = AssociativeRecall(train_size=32, val_size=16, test_size=16, batch_size=16)
    return fit_logging_pictures(
        SequenceClassifier(177, 10, dim=16, depth=1), SequenceClassification(10), data, root, epochs, logger
    )


def events(folder) -> list:
    """The events of the TensorBoard event files under ``folder`` (TFRecord frames: length, its CRC,
    the event, its CRC)."""
    from tensorboardX.proto.event_pb2 import Event

    found = []
    for file in sorted(folder.rglob("events.out.tfevents.*")):
        data = file.read_bytes()
        while data:
            (length,) = struct.unpack("<Q", data[:8])
            found.append(Event.FromString(data[12 : 12 + length]))
            data = data[12 + length + 4 :]
    return found


@pytest.mark.slow
def test_the_csv_logger_writes_each_validations_picture_as_a_png_file_in_the_run_folder(tmp_path):
    fit(CSVLogger(save_dir=str(tmp_path)), tmp_path / "trainer")
    files = sorted((tmp_path / "pictures").rglob("*.png"))
    assert files == [picture_file(tmp_path, KEY, step) for step in (1, 3)], "two validations, at their steps"
    first, second = (np.asarray(Image.open(file)) for file in files)
    assert first.shape == second.shape and first.shape[2] == 3 and min(first.shape[:2]) >= 400


@pytest.mark.slow
def test_the_tensorboard_logger_writes_the_pictures_as_images_with_no_service(tmp_path):
    fit(TensorBoardLogger(save_dir=str(tmp_path)), tmp_path / "trainer")
    images = [
        (event.step, value.image)
        for event in events(tmp_path / "tensorboard")
        for value in event.summary.value
        if value.tag == KEY
    ]
    assert [step for step, _ in images] == [1, 3]
    for _, image in images:
        pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
        assert pixels.shape[:2] == (image.height, image.width) and min(pixels.shape[:2]) >= 400


def test_a_resume_from_a_checkpoint_without_a_record_keeps_the_csv_rows_up_to_its_step(tmp_path):
    logger = CSVLogger(save_dir=str(tmp_path))
    for step in range(6):
        logger.log_metrics({"train/loss": 1.0 / 2**step}, step=step)
    logger.save()
    logger.resume_at(2, None)  # an older version's checkpoint: the rows after its step go
    assert (tmp_path / "metrics.csv").read_text().splitlines() == ["step,train/loss", "0,1.0", "1,0.5", "2,0.25"]
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.csv"]  # no temporary file left
