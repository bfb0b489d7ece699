"""A logger for tests that keeps the images it is given (``--trainer.logger=tests.image_logger.ImageLogger``).

Like W&B it takes images, so the ``attention_maps`` callback draws the task's pictures and the
blocks' maps for it, but it writes nothing and starts no service.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from lightning.pytorch.loggers import Logger


class ImageLogger(Logger):
    def __init__(self, save_dir: Optional[str] = None) -> None:
        super().__init__()
        self._save_dir = save_dir  # the run folder, filled in by the CLI
        self.images: dict[str, list] = {}

    name, version = "images", 0

    @property
    def save_dir(self) -> Optional[str]:
        return self._save_dir

    def log_metrics(self, metrics, step=None) -> None:
        pass

    def log_hyperparams(self, params, *args, **kwargs) -> None:
        pass

    def log_image(self, key, images, step=None) -> None:
        self.images[key] = images


def logged_pictures(trainer) -> dict[str, list]:
    """The images the run's ImageLogger received, each checked to be an (H, W, 3) uint8 array."""
    (logger,) = [logger for logger in trainer.loggers if isinstance(logger, ImageLogger)]
    for key, images in logger.images.items():
        for image in images:
            assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3, key
    return logger.images
