"""Checkpoints written atomically: a crash mid-write never leaves a truncated file, and no
checkpoint ever holds non-finite weights."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from .callbacks.guard import non_finite_weights
from .errors import CheckpointError, NonFiniteError


class AtomicCheckpointIO(TorchCheckpointIO):
    """Save to a temporary file in the same folder, fsync, then rename over the target.

    ``os.replace`` is atomic on POSIX and Windows, so ``best.ckpt`` and ``last.ckpt`` are
    always either the previous complete checkpoint or the new complete one: a full disk or a
    kill while writing leaves the previous one in place (the error names the file). Weights
    holding a NaN or an infinity are refused, so a diverged run never replaces a good
    checkpoint (:class:`~framework.callbacks.NonFiniteGuard` normally stops it first).
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Optional[Any] = None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options, got {storage_options!r}")
        path = Path(path)
        if bad := non_finite_weights(checkpoint.get("state_dict", {})):
            raise NonFiniteError(f"refusing to write {path}: the weights {', '.join(bad[:3])} hold NaN or infinite "
                                 "values (the previous checkpoint there is kept)")
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        try:
            with open(partial, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(partial, path)
        except (OSError, RuntimeError) as err:  # a full disk surfaces as either
            reason = getattr(err, "strerror", None) or str(err).splitlines()[0]
            raise CheckpointError(f"could not write the checkpoint {path}: {reason}; the previous checkpoint there, "
                                  "if any, is intact") from err
        finally:
            partial.unlink(missing_ok=True)
