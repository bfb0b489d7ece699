"""A callback for the resume test: the process kills itself with SIGKILL (kill -9) at a given step."""

from __future__ import annotations

import os
import signal

from lightning.pytorch.callbacks import Callback


class KillAt(Callback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, *args) -> None:
        if trainer.global_step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)
