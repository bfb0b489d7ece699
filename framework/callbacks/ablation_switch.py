"""``test --ablation``: the test runs with chosen blocks ablated."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from typing import Optional

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback

from ..evaluation.block_ablation import ablated


class AblationSwitch(Callback):
    """``test --ablation=MODE --ablation_blocks=[...]``: the test runs with the chosen blocks'
    weights replaced (``uniform``, ``random``, ``permute``) or the blocks skipped (``none``)."""

    def __init__(self, mode: str, patterns: Sequence[str] = ()) -> None:
        self.mode, self.patterns = mode, list(patterns)
        self._stack: Optional[ExitStack] = None

    def on_test_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._stack = ExitStack()
        self._stack.enter_context(ablated(pl_module.model, self.mode, *self.patterns))

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        self.on_test_end(trainer, pl_module)
