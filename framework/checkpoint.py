"""Checkpoints written atomically: a crash mid-write never leaves a truncated file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO


class AtomicCheckpointIO(TorchCheckpointIO):
    """Save to a temporary file in the same folder, fsync, then rename over the target.

    ``os.replace`` is atomic on POSIX and Windows, so ``best.ckpt`` and ``last.ckpt`` are
    always either the previous complete checkpoint or the new complete one.
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Optional[Any] = None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options, got {storage_options!r}")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        try:
            with open(partial, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)
