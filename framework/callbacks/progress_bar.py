"""A progress bar that never waits for the device and redraws a few times a second."""

from __future__ import annotations

import time
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import TQDMProgressBar


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
