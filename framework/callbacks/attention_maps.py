"""Captured attention maps, logged as images every N validation epochs."""

from __future__ import annotations

from typing import Optional

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from torch import Tensor

from ..attention import capture
from ..pictures import heatmap


def _as_array(image: object) -> object:
    """A tensor image as a numpy array for the loggers; anything else as is."""
    return image.detach().cpu().numpy() if isinstance(image, Tensor) else image


class AttentionMaps(Callback):
    """Log attention maps of the model's blocks, and the task's pictures, to every logger
    that takes images (W&B).

    Every ``every_n_epochs`` validation epochs, the first validation batch runs once more
    through the task under :class:`~framework.attention.capture`; each block's record is
    drawn by the block's ``weights_image`` (one 2-D map of the first example) and logged
    under ``attention/<block>``. The task's :meth:`~framework.tasks.Task.images` of the same
    batch (predicted masks, alignments ...) are logged under ``images/<name>``.

    Args:
        every_n_epochs: how often; 0 turns the callback off.
        blocks: which blocks (glob patterns over module names, or registry names); all by default.
    """

    def __init__(self, every_n_epochs: int = 1, blocks: Optional[list[str]] = None) -> None:
        self.every_n_epochs = every_n_epochs
        self.blocks = blocks or []

    def on_validation_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: object,
                                batch: object, batch_idx: int, dataloader_idx: int = 0) -> None:
        if batch_idx or dataloader_idx or trainer.sanity_checking or not self.every_n_epochs:
            return
        if (trainer.current_epoch + 1) % self.every_n_epochs:
            return
        loggers = [logger for logger in trainer.loggers if hasattr(logger, "log_image")]
        if not loggers:
            return
        # Every rank runs the forward pass (sharded models need all ranks); rank 0 logs.
        with torch.no_grad(), capture(pl_module.model, *self.blocks) as maps:
            pl_module.task.step(pl_module.model, batch, "val")
        with torch.no_grad():
            pictures = pl_module.task.images(pl_module.model, batch)
        if not trainer.is_global_zero:
            return
        for name, images in pictures.items():
            for logger in loggers:
                logger.log_image(key=f"images/{name}", images=[_as_array(i) for i in images], step=trainer.global_step)
        modules = dict(pl_module.model.named_modules())
        for name, records in maps.items():
            block = modules.get(name, pl_module.model)
            images = [heatmap(m).numpy() for r in records if (m := block.weights_image(r)) is not None]
            if images:
                for logger in loggers:
                    logger.log_image(key=f"attention/{name}", images=images, step=trainer.global_step)
