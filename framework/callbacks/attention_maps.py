"""Captured attention maps, logged as images every N validation epochs."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import WandbLogger

from ..attention import capture
from ..drawing import Job, drawer
from ..loggers import metrics_step
from ..pictures import Sketch, as_image, sketching
from ..values import NonNegativeInt
from .attention_stats import watch_validation_step

#: seconds to wait for the drawing process at the end of a stage before drawing a job here
WAIT = 120.0


class Drawing(NamedTuple):
    """Pictures on their way to the loggers: one key's, of one validation (its step)."""

    key: str
    step: int
    job: Job
    loggers: list


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

    The pictures are drawn within :func:`~framework.pictures.sketching`: the picture functions
    give sketches (their inputs, on the CPU), which the drawing process (:mod:`framework.drawing`)
    builds and rasterises while training goes on. Each key's pictures are logged when they are
    done (checked after every training batch), at the step of the metrics of the validation that
    drew them, and all of them before the stage ends (a stage that fails too). Pictures that are
    arrays or tensors already are logged as they are.

    The capture records the exact rows of ``probes`` queries per call (every query of a map
    that has no more; :mod:`framework.attention.probes`), so a block over a large feature map
    (non-local at 128 x 256, criss-cross at 97 x 97) draws where its probe pixel nearest the
    middle looks without its N x N map, and fused paths stay fused.

    Args:
        every_n_epochs: how often; 0 turns the callback off.
        blocks: which blocks (glob patterns over module names, or registry names); all by default.
        probes: probe queries per call of a block; 0 captures the full maps.
    """

    def __init__(
        self, every_n_epochs: NonNegativeInt = 1, blocks: Optional[list[str]] = None, probes: NonNegativeInt = 64
    ) -> None:
        self.every_n_epochs = every_n_epochs
        self.blocks = blocks or []
        self.probes = probes
        self._rows: Optional[capture] = None  # the capture the first validation step runs inside
        self._drawing: list[Drawing] = []  # submitted, not logged yet

    def _due(self, trainer: pl.Trainer, batch_idx: int, dataloader_idx: int) -> list:
        """The loggers that take images, when this batch is drawn (none otherwise)."""
        if batch_idx or dataloader_idx or trainer.sanity_checking or not self.every_n_epochs:
            return []
        if (trainer.current_epoch + 1) % self.every_n_epochs:
            return []
        return [logger for logger in trainer.loggers if hasattr(logger, "log_image")]

    def on_validation_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: object, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._rows = None
        if self._due(trainer, batch_idx, dataloader_idx):
            self._rows = watch_validation_step(pl_module, self.blocks, self.probes)

    def on_validation_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: object,
        batch: object,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        loggers = self._due(trainer, batch_idx, dataloader_idx)
        if not loggers:
            return
        # Every rank runs the forward pass (sharded models need all ranks); rank 0 logs.
        maps, self._rows = self._rows, None
        if maps is None:
            with torch.no_grad(), capture(pl_module.model, *self.blocks, probes=self.probes or None) as maps:
                pl_module.task.step(pl_module.model, batch, "val")
        with torch.no_grad(), sketching():
            pictures = pl_module.task.images(pl_module.model, batch)
        if not trainer.is_global_zero:
            return
        for name, images in pictures.items():
            self._draw(f"images/{name}", images, metrics_step(trainer), loggers)
        modules = dict(pl_module.model.named_modules())
        for name, records in maps.items():
            block = modules.get(name, pl_module.model)
            captions = [
                f"{name}, first validation example, epoch {trainer.current_epoch + 1}"
                + (f", call {k + 1} of {len(records)}" if len(records) > 1 else "")
                for k in range(len(records))
            ]
            with sketching():
                drawn = [p for r, c in zip(records, captions) if (p := block.weights_picture(r, c)) is not None]
            if drawn:
                self._draw(f"attention/{name}", drawn, metrics_step(trainer), loggers)

    def _draw(self, key: str, pictures: list[Any], step: int, loggers: list) -> None:
        """Sketches and figures go to the drawing process; a list with tensors or arrays is made
        images here."""
        if all(isinstance(p, Sketch) or hasattr(p, "canvas") for p in pictures):
            job = drawer().submit(pictures)
        else:
            job = Job.ready([as_image(p) for p in pictures])
        self._drawing.append(Drawing(key, step, job, loggers))

    def _log(self, wait: bool) -> None:
        """Log the pictures that are done, in the order they were drawn (with ``wait``: all of them)."""
        while self._drawing and (wait or self._drawing[0].job.done()):
            key, step, job, loggers = self._drawing.pop(0)
            files = job.files(WAIT)
            for logger in loggers:  # W&B takes the PNG files as they are; other loggers arrays
                images = [str(f) for f in files] if files and isinstance(logger, WandbLogger) else job.images(0)
                logger.log_image(key=key, images=images, step=step)
            job.discard()

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._log(wait=False)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._log(wait=True)

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        self._log(wait=True)
