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
from ..pictures import Gathered, sketching
from ..values import NonNegativeInt
from .attention_stats import watch_validation_step

#: seconds to wait for the drawing process at the end of a stage before drawing a job here
WAIT = 120.0


class Drawing(NamedTuple):
    """A picture on its way to the loggers: one key's, of one validation (its step), with its caption."""

    key: str
    step: int
    caption: str
    job: Job
    loggers: list


class AttentionMaps(Callback):
    """Log attention maps of the model's blocks, and the task's pictures, to every logger
    that takes images (W&B, TensorBoard; CSV writes them as PNG files in the run folder).

    Every ``every_n_epochs`` validation epochs, the first validation batch is captured under
    :class:`~framework.attention.capture` (its own step, where the capture leaves the step
    unchanged: :func:`~framework.callbacks.attention_stats.watch_validation_step`; else the
    batch runs once more); each block's records are drawn by the block's ``calls_picture``
    (the first example's map with named axes, a colour bar and padding hatched; a block called
    several times, a decoder's steps, as one calls x keys map) and logged under
    ``attention/<block>``. The task's :meth:`~framework.tasks.Task.images` of the same batch
    (predicted masks, alignments ...) are logged under ``images/<name>``.

    One rule for every key: one image per key per validation, its pictures stacked
    (:class:`~framework.pictures.Gathered`) under a header naming the key and the epoch (counted
    from 0, as W&B counts), which is also the image's caption; and one size per key, its first
    image's (later ones laid out anew at that size). Images reach the loggers as (H, W, 3) uint8
    arrays, or W&B as PNG files.

    The pictures are drawn within :func:`~framework.pictures.sketching`: the picture functions
    give sketches (their inputs, on the CPU), which the drawing process (:mod:`framework.drawing`)
    builds and rasterises while training goes on. Each key's pictures are logged when they are
    done (checked after every training batch), at the step of the metrics of the validation that
    drew them, and all of them before the stage ends (a stage that fails too). Pictures that are
    arrays or tensors already are stacked as they are.

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
        self._sizes: dict[str, tuple[int, int]] = {}  # key -> (H, W) pixels: one size per key

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
            self._draw(f"images/{name}", images, trainer, loggers)
        modules = dict(pl_module.model.named_modules())
        for name, records in maps.items():
            with sketching():
                drawn = modules.get(name, pl_module.model).calls_picture(records, f"{name}, first validation example")
            if drawn:
                self._draw(f"attention/{name}", drawn, trainer, loggers)

    def _draw(self, key: str, pictures: list[Any], trainer: pl.Trainer, loggers: list) -> None:
        """The key's pictures of this validation, gathered into one, go to the drawing process, at the
        size the key keeps (its first picture's)."""
        step = metrics_step(trainer)
        header = f"{key}, epoch {trainer.current_epoch} (step {step})"  # W&B's epoch: counted from 0
        one = Gathered(tuple(pictures), header, self._size(key))
        self._drawing.append(Drawing(key, step, header, drawer().submit([one]), loggers))

    def _size(self, key: str) -> Optional[tuple[int, int]]:
        """The (H, W) pixels of the key's pictures: its first picture's, waited for if not drawn yet
        (None: the key has none yet)."""
        if key not in self._sizes:
            for drawing in self._drawing:
                if drawing.key == key:
                    self._sizes[key] = drawing.job.images(WAIT)[0].shape[:2]
                    break
        return self._sizes.get(key)

    def _log(self, wait: bool) -> None:
        """Log the pictures that are done, in the order they were drawn (with ``wait``: all of them)."""
        while self._drawing and (wait or self._drawing[0].job.done()):
            key, step, header, job, loggers = self._drawing.pop(0)
            files = job.files(WAIT)
            for logger in loggers:  # W&B takes the PNG files as they are; other loggers arrays
                images = [str(f) for f in files] if files and isinstance(logger, WandbLogger) else job.images(0)
                logger.log_image(key=key, images=images, step=step, caption=[header])
            if key not in self._sizes:
                self._sizes[key] = job.images(0)[0].shape[:2]
            job.discard()

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._log(wait=False)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._log(wait=True)

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        self._log(wait=True)
