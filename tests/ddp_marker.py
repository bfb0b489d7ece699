"""A callback for the DDP test: every rank leaves a file saying it finished, and at which step."""

from __future__ import annotations

from pathlib import Path

from lightning.pytorch.callbacks import Callback


class RankFinished(Callback):
    def on_fit_end(self, trainer, pl_module) -> None:
        path = Path(trainer.default_root_dir) / f"rank{trainer.global_rank}.done"
        path.write_text(f"{trainer.world_size} {trainer.global_step}")
