"""A callback for the resume tests: the process kills itself with SIGKILL (kill -9) at a chosen point.

``KillAt(step=13)`` dies after training step 13; ``KillAt(event=..., n=...)`` at the n-th (1-based)
occurrence of an event: ``train_batch`` (after a training step), ``val_batch`` (inside a
validation), ``epoch_end`` (after an epoch's end, its checkpoint written), ``checkpoint`` (while a
checkpoint is being written: its bytes written, not yet renamed into place), ``seconds`` (n
seconds after training starts, from a timer thread: anywhere). ``signal="TERM"`` sends SIGTERM
instead (what SLURM and Kubernetes send), which the run handles: it stops after the step it is in.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Optional

from lightning.pytorch.callbacks import Callback

EVENTS = ("train_batch", "val_batch", "epoch_end", "checkpoint", "seconds")


SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM}


class KillAt(Callback):
    def __init__(
        self, step: Optional[int] = None, event: Optional[str] = None, n: float = 1, signal: str = "KILL"
    ) -> None:
        if event is not None and event not in EVENTS:
            raise ValueError(f"event must be one of {EVENTS}, got {event!r}")
        self.step, self.event, self.n, self.count, self.signal = step, event, n, 0, SIGNALS[signal]

    def die(self) -> None:
        os.kill(os.getpid(), self.signal)

    def _tick(self, event: str) -> None:
        if event == self.event:
            self.count += 1
            if self.count == self.n:
                self.die()

    def on_train_start(self, trainer, pl_module) -> None:
        if self.event == "seconds":
            timer = threading.Timer(self.n, self.die)
            timer.daemon = True
            timer.start()
        if self.event == "checkpoint":  # die after the new file's bytes are written, before its rename
            io, real_fsync = trainer.strategy.checkpoint_io, os.fsync
            save = io.save_checkpoint

            def saving(*args, **kwargs):
                self.count += 1
                os.fsync = (lambda fd: self.die() or real_fsync(fd)) if self.count == self.n else real_fsync
                try:
                    return save(*args, **kwargs)
                finally:
                    os.fsync = real_fsync

            io.save_checkpoint = saving

    def on_train_batch_end(self, trainer, pl_module, *args) -> None:
        if self.step is not None and trainer.global_step == self.step:
            self.die()
        self._tick("train_batch")

    def on_validation_batch_end(self, trainer, pl_module, *args) -> None:
        if not trainer.sanity_checking:
            self._tick("val_batch")

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._tick("epoch_end")
