"""Captured attention maps, logged as images every N validation epochs."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Optional

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.callbacks import Callback
from torch import nn

from ..attention import capture
from ..pictures import as_image
from .attention_stats import watch_validation_step


class AttentionMaps(Callback):
    """Log attention maps of the model's blocks, and the task's pictures, to every logger
    that takes images (W&B).

    Every ``every_n_epochs`` validation epochs, the first validation batch is captured under
    :class:`~framework.attention.capture` (its own step, where the capture leaves the step
    unchanged: :func:`~framework.callbacks.attention_stats.watch_validation_step`; else the
    batch runs once more); each block's record is drawn by the block's ``weights_picture``
    (the first example's map with named axes, a colour bar and padding hatched; one picture
    per call of the block) and logged under ``attention/<block>``. The task's
    :meth:`~framework.tasks.Task.images` of the same batch (predicted masks, alignments ...)
    are logged under ``images/<name>``. Pictures reach the loggers as (H, W, 3) uint8 arrays
    (:func:`framework.pictures.as_image`).

    Drawing a picture (matplotlib's layout and rasterising) takes longer than a training step
    of a small model: with ``background``, the blocks' pictures are made, and every picture
    rasterised and encoded for W&B, in a thread while training goes on; they are logged at the
    validation's step by the first training batch after they are ready (at the latest before
    the next pictures, and when the stage ends). The task's pictures are made in the
    validation (they may run the model, which training changes).

    The capture records the exact rows of ``probes`` queries per call (every query of a map
    that has no more; :mod:`framework.attention.probes`), so a block over a large feature map
    (non-local at 128 x 256, criss-cross at 97 x 97) draws where its probe pixel nearest the
    middle looks without its N x N map, and fused paths stay fused.

    Args:
        every_n_epochs: how often; 0 turns the callback off.
        blocks: which blocks (glob patterns over module names, or registry names); all by default.
        probes: probe queries per call of a block; 0 captures the full maps.
        background: draw in a thread while training goes on (False: before the validation goes on).
    """

    def __init__(self, every_n_epochs: int = 1, blocks: Optional[list[str]] = None, probes: int = 64,
                 background: bool = True) -> None:
        if probes < 0:
            raise ValueError(f"attention_maps: probes must be 0 (full maps) or more, got {probes}")
        self.every_n_epochs = every_n_epochs
        self.blocks = blocks or []
        self.probes = probes
        self.background = background
        self._rows: Optional[capture] = None  # the capture the first validation step runs inside
        self._drawing: Optional[tuple[Future, int, list]] = None  # (pictures being drawn, their step, loggers)
        self._pool: Optional[ThreadPoolExecutor] = None

    def _due(self, trainer: pl.Trainer, batch_idx: int, dataloader_idx: int) -> list:
        """The loggers that take images, when this batch is drawn (none otherwise)."""
        if batch_idx or dataloader_idx or trainer.sanity_checking or not self.every_n_epochs:
            return []
        if (trainer.current_epoch + 1) % self.every_n_epochs:
            return []
        return [logger for logger in trainer.loggers if hasattr(logger, "log_image")]

    def on_validation_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: object,
                                  batch_idx: int, dataloader_idx: int = 0) -> None:
        self._rows = None
        if self._due(trainer, batch_idx, dataloader_idx):
            self.log_drawn(wait=True)
            self._rows = watch_validation_step(pl_module, self.blocks, self.probes)

    def on_validation_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: object,
                                batch: object, batch_idx: int, dataloader_idx: int = 0) -> None:
        loggers = self._due(trainer, batch_idx, dataloader_idx)
        if not loggers:
            return
        # Every rank runs the forward pass (sharded models need all ranks); rank 0 logs.
        maps, self._rows = self._rows, None
        if maps is None:
            with torch.no_grad(), capture(pl_module.model, *self.blocks, probes=self.probes or None) as maps:
                pl_module.task.step(pl_module.model, batch, "val")
        with torch.no_grad():
            pictures = pl_module.task.images(pl_module.model, batch)
        if not trainer.is_global_zero:
            return
        drawn = partial(_draw, pictures, dict(maps), dict(pl_module.model.named_modules()), pl_module.model,
                        trainer.current_epoch)
        if not self.background:
            _log(loggers, _prepared(loggers, drawn()), trainer.global_step)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attention_maps")
        self._drawing = (self._pool.submit(lambda: _prepared(loggers, drawn())), trainer.global_step, loggers)

    def log_drawn(self, wait: bool = False) -> None:
        """Log the pictures drawn in the background, if they are ready (``wait``: when they are)."""
        if self._drawing is not None and (wait or self._drawing[0].done()):
            (drawing, step, loggers), self._drawing = self._drawing, None
            _log(loggers, drawing.result(), step)

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: object,
                             batch_idx: int) -> None:
        self.log_drawn()

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self.log_drawn(wait=True)  # before the loggers finish
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        """The pictures of a validation before the failure are logged; a failure to draw them is
        not raised over the run's own."""
        try:
            self.teardown(trainer, pl_module, "")
        except Exception:  # noqa: BLE001
            pass


def _draw(pictures: dict[str, list], maps: dict[str, list], modules: dict[str, nn.Module], model: nn.Module,
          epoch: int) -> list[tuple[str, list[np.ndarray]]]:
    """``(key, images)`` to log: the task's ``pictures`` as ``images/<name>``, each block's records of
    ``maps`` drawn as ``attention/<block>``, rasterised."""
    logged = [(f"images/{name}", [as_image(i) for i in images]) for name, images in pictures.items()]
    for name, records in maps.items():
        block = modules.get(name, model)
        captions = [f"{name}, first validation example, epoch {epoch + 1}"
                    + (f", call {k + 1} of {len(records)}" if len(records) > 1 else "") for k in range(len(records))]
        with torch.no_grad():  # the grad mode of a thread is its own
            images = [as_image(p) for r, c in zip(records, captions) if (p := block.weights_picture(r, c)) is not None]
        if images:
            logged.append((f"attention/{name}", images))
    return logged


def _prepared(loggers: list, drawn: list[tuple[str, list[np.ndarray]]]) -> list[tuple[str, list[list]]]:
    """Per key, the images as each logger takes them: made ready by the logger (``prepare_images``:
    W&B's encoding) where it can, so that logging them costs the training thread nothing more."""
    return [(key, [logger.prepare_images(images) if hasattr(logger, "prepare_images") else images for logger in loggers])
            for key, images in drawn]


def _log(loggers: list, prepared: list[tuple[str, list[list]]], step: int) -> None:
    for key, per_logger in prepared:
        for logger, images in zip(loggers, per_logger):
            logger.log_image(key=key, images=images, step=step)
