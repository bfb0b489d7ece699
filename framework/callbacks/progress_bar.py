"""What a run shows of its progress: on a terminal a bar that never waits for the device and
redraws a few times a second (:class:`ProgressBar`), elsewhere plain lines (:class:`PlainProgress`)."""

from __future__ import annotations

import time
from typing import Any, Optional, TextIO

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ProgressBar as ProgressBarBase
from lightning.pytorch.callbacks import TQDMProgressBar

from ..values import NonNegativeFloat


class ProgressBar(TQDMProgressBar):
    """Lightning's tqdm bar, cheap enough for models whose steps take a millisecond.

    * A metric logged with ``prog_bar=True`` in every training step is turned into a Python
      number at every step, which makes the host wait for the GPU each time (a small model
      then leaves the GPU idle between steps). This bar shows instead
      :attr:`~framework.TaskModule.last_loss`, which the module refreshes every
      ``trainer.log_every_n_steps`` steps, and the validation metrics of the last epoch.
    * Lightning redraws the bar after every batch; a redraw costs about a millisecond, as
      much as a whole step of a small model. This bar redraws at most every ``interval``
      seconds (and at the end of each loop).

    Args:
        interval: the shortest time between two redraws, in seconds.
        refresh_rate, leave: as in ``TQDMProgressBar``.
    """

    def __init__(self, interval: float = 0.25, refresh_rate: int = 1, leave: bool = False) -> None:
        super().__init__(refresh_rate=refresh_rate, leave=leave)
        self.interval = interval
        self._drawn = 0.0

    def _should_update(self, current: int, total: int) -> bool:
        if not super()._should_update(current, total):
            return False
        now = time.monotonic()
        if current == total or now - self._drawn >= self.interval:
            self._drawn = now
            return True
        return False

    def get_metrics(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict[str, Any]:
        items = super().get_metrics(trainer, pl_module)
        items.pop("v_num", None)
        loss = getattr(pl_module, "last_loss", None)
        if loss is not None:
            items["loss"] = f"{loss:.4g}"
        return items


class PlainProgress(ProgressBarBase):
    """The progress of a run whose output is no terminal (a log file, a CI job), as plain lines:
    one line per training epoch, with the step, the epoch's mean training loss and the last
    validation's metrics in the task's reading order (:meth:`~framework.tasks.Task.reading_order`,
    attention statistics left out), and within a long epoch, validation, test or prediction a
    line every ``every`` seconds with the batch reached (and the last logged training loss)::

        epoch 3/8  step 920  batch 120/400  loss 0.6121  41 s
        epoch 3/8  step 1200  loss 0.5314  val/acc 0.9512  val/f1 0.9497  val/loss 0.1733  52 s
        test  batch 30/100  55 s

    Args:
        every: the shortest time between two lines within an epoch or evaluation, in seconds
            (0: only the epochs' lines).
    """

    def __init__(self, every: NonNegativeFloat = 30.0) -> None:
        super().__init__()
        self.every = every
        self._enabled = True
        self._ended: Optional[tuple[str, float]] = None  # the line of an epoch that ended, and when
        self._started = self._printed = time.monotonic()

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._started = self._printed = time.monotonic()

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._every(f"{self._epoch(trainer)}  batch {batch_idx + 1}/{_count(self.total_train_batches)}", pl_module)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # The module logs the epoch's training loss after the callbacks' hook: the line waits for it.
        self._ended = (self._epoch(trainer), time.monotonic())

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._epoch_line(trainer, pl_module)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._epoch_line(trainer, pl_module)

    def _epoch_line(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """The line of the epoch that ended last: its mean training loss and the last validation's metrics."""
        if self._ended is None:
            return
        (epoch, ended), self._ended = self._ended, None
        metrics = trainer.callback_metrics
        loss = f"  loss {float(metrics['train/loss']):.4g}" if "train/loss" in metrics else self._loss(pl_module)
        names = [name for name in metrics if name.startswith("val/")]
        order = getattr(getattr(pl_module, "task", None), "reading_order", sorted)
        shown = "".join(f"  {name} {float(metrics[name]):.4g}" for name in order(names))
        self._line(f"{epoch}{loss}{shown}", ended)

    def on_validation_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int, idx: int = 0
    ) -> None:
        if not trainer.sanity_checking:
            stage = "validation" if trainer.state.fn == "fit" else "validate"
            self._every(f"{stage}  batch {batch_idx + 1}/{_count(trainer.num_val_batches[idx])}")

    def on_test_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int, idx: int = 0
    ) -> None:
        self._every(f"test  batch {batch_idx + 1}/{_count(trainer.num_test_batches[idx])}")

    def on_predict_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int, idx: int = 0
    ) -> None:
        self._every(f"predict  batch {batch_idx + 1}/{_count(trainer.num_predict_batches[idx])}")

    def _epoch(self, trainer: pl.Trainer) -> str:
        last = trainer.max_epochs if trainer.max_epochs is not None and trainer.max_epochs >= 0 else "?"
        return f"epoch {trainer.current_epoch + 1}/{last}  step {trainer.global_step}"

    @staticmethod
    def _loss(pl_module: pl.LightningModule) -> str:
        loss = getattr(pl_module, "last_loss", None)
        return "" if loss is None else f"  loss {float(loss):.4g}"

    def _every(self, text: str, pl_module: Optional[pl.LightningModule] = None) -> None:
        if self.every and time.monotonic() - self._printed >= self.every:
            self._line(text + (self._loss(pl_module) if pl_module is not None else ""))

    def _line(self, text: str, at: Optional[float] = None) -> None:
        """Print ``text`` and the seconds from the start to ``at`` (default: now)."""
        if self._enabled and self.trainer.is_global_zero:
            self._printed = time.monotonic()
            print(f"{text}  {(at or self._printed) - self._started:.0f} s", flush=True)


def _count(total: float) -> str:
    """A loop's number of batches, ``?`` where it is unknown (an iterable without a length)."""
    return str(int(total)) if total != float("inf") else "?"


def progress_bar(stream: TextIO) -> ProgressBarBase:
    """The progress display of a run that prints to ``stream``: the bar on a terminal, plain lines elsewhere."""
    return ProgressBar() if getattr(stream, "isatty", lambda: False)() else PlainProgress()
