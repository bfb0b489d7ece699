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
        self.steps: list[tuple[str, Optional[int]]] = []  # (key, step) of every log_image, in order
        self.calls: list[tuple[str, Optional[int], list, list]] = []  # (key, step, images, captions) of each
        self.metric_steps: list[tuple[set, Optional[int]]] = []  # (names, step) of every log_metrics

    name, version = "images", 0

    @property
    def save_dir(self) -> Optional[str]:
        return self._save_dir

    def log_metrics(self, metrics, step=None) -> None:
        self.metric_steps.append((set(metrics), step))

    def log_hyperparams(self, params, *args, **kwargs) -> None:
        pass

    def log_image(self, key, images, step=None, caption=None) -> None:
        self.images[key] = images
        self.steps.append((key, step))
        self.calls.append((key, step, list(images), list(caption or [])))


def logged_pictures(trainer) -> dict[str, list]:
    """The images the run's ImageLogger received, each checked to be an (H, W, 3) uint8 array."""
    (logger,) = [logger for logger in trainer.loggers if isinstance(logger, ImageLogger)]
    for key, images in logger.images.items():
        for image in images:
            assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3, key
    return logger.images


def one_image_per_key_per_validation(logger: ImageLogger) -> dict[str, tuple[int, int]]:
    """Check the ``attention_maps`` callback's rule on what ``logger`` received: each key logged once
    per validation (step), one image with its caption naming the key, and every image of a key of
    one size; key -> that (H, W)."""
    seen, sizes = set(), {}
    for key, step, images, captions in logger.calls:
        assert (key, step) not in seen, f"{key} logged twice at step {step}"
        seen.add((key, step))
        assert len(images) == 1 and len(captions) == 1 and captions[0].startswith(key), (key, len(images), captions)
        size = sizes.setdefault(key, images[0].shape[:2])
        assert images[0].shape[:2] == size, f"{key}: {images[0].shape[:2]} at step {step}, {size} before"
    return sizes


def colour_bars(fig) -> list:
    """The colour bars of a matplotlib figure (matplotlib marks their axes with ``_colorbar``)."""
    return [ax._colorbar for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]


def readable(fig, bars: int = 1) -> np.ndarray:
    """Check a picture of ``framework.pictures``: at least 400 pixels a side, a caption, every
    panel's axes named (a shared x axis once; a panel without axes, such as a graph, has a title), ``bars`` labelled
    colour bars (at least); its pixels, (H, W, 3) uint8 as the loggers get them."""
    from framework.pictures import as_image

    image = as_image(fig)
    width, height = (fig.get_size_inches() * fig.dpi).round().astype(int)
    assert image.shape == (height, width, 3) and image.dtype == np.uint8 and min(height, width) >= 400, image.shape
    assert fig._suptitle is not None and fig._suptitle.get_text(), "a caption names what is drawn"
    found = colour_bars(fig)
    assert len(found) >= bars and all(bar.ax.get_ylabel() or bar.ax.get_xlabel() for bar in found), (
        "labelled colour bars"
    )
    for ax in fig.axes:
        if getattr(ax, "_colorbar", None) is None:
            across = any(other.get_xlabel() for other in ax.get_shared_x_axes().get_siblings(ax))  # shared: named once
            named = (across and ax.get_ylabel()) if ax.axison else ax.get_title()
            assert named, f"a panel without axis names: {ax.get_title()!r}"
    return image


def fit_logging_pictures(model, task, data, root, epochs: int = 1, logger=None):
    """Fit ``model`` for ``task`` on ``data`` (SGD, lr 0.1) for ``epochs`` with the ``attention_maps``
    callback and nothing else (no checkpoints, bars or summary), under ``root``; the logger that
    took its pictures (an :class:`ImageLogger` unless ``logger`` is given)."""
    import lightning.pytorch as pl
    import torch

    from framework import TaskModule
    from framework.callbacks import AttentionMaps

    logger = logger or ImageLogger()
    module = TaskModule(model, task)
    module.configure_optimizers = lambda: torch.optim.SGD(module.parameters(), lr=0.1)
    trainer = pl.Trainer(
        max_epochs=epochs,
        logger=logger,
        callbacks=[AttentionMaps()],
        default_root_dir=root,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    trainer.fit(module, data)
    return logger
