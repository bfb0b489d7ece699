"""Loggers whose files land in the run folder, and a W&B logger that never needs a network."""

from __future__ import annotations

import hashlib
import netrc
import os
from pathlib import Path
from typing import Any, Optional

from lightning.pytorch.loggers import CSVLogger as _CSVLogger
from lightning.pytorch.loggers import WandbLogger as _WandbLogger
from lightning.pytorch.utilities import rank_zero_info


def wandb_credentials_available() -> bool:
    """An API key in the environment or in ~/.netrc (what ``wandb login`` writes)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (FileNotFoundError, netrc.NetrcParseError):
        return False


class WandbLogger(_WandbLogger):
    """Lightning's W&B logger, with defaults for this framework.

    * ``save_dir`` (left unset) is the run folder; ``name`` defaults to
      ``<experiment>/<run folder>`` and ``id`` to a name derived from the folder's path, so a
      resumed ``fit`` continues the same W&B run and two folders never share one.
    * ``offline`` (left unset) is decided here: without an API key (``WANDB_API_KEY`` or
      ``wandb login``) the run is written offline into ``<run>/wandb`` and this is said once;
      ``wandb sync <run>/wandb/offline-run-*`` uploads it later. A ``WANDB_MODE`` set by the
      user (``offline``, ``disabled``, ``online``) is honoured as it is.
    * Under DDP only rank 0 creates a run (Lightning's rank-zero experiment).
    * The run is closed at the end of each trainer stage, so its files are complete.
    """

    def __init__(
        self,
        name: Optional[str] = None,
        save_dir: Optional[str] = None,
        project: str = "attention-framework",
        offline: Optional[bool] = None,
        id: Optional[str] = None,
        log_model: bool = False,
        **kwargs: Any,
    ) -> None:
        mode = os.environ.get("WANDB_MODE")  # the user's explicit choice wins
        if offline is None:
            offline = mode is None and not wandb_credentials_available()
            if offline:
                rank_zero_info(
                    f"W&B: no API key (WANDB_API_KEY or `wandb login`), so the run is logged offline into "
                    f"{save_dir or '.'}/wandb; upload it later with `wandb sync`."
                )
        folder = Path(save_dir).resolve() if save_dir else None
        super().__init__(
            name=name or (f"{folder.parent.name}/{folder.name}" if folder else None),
            save_dir=save_dir or ".",
            project=project,
            id=id or (_run_id(folder) if folder else None),
            log_model=log_model,
            # Passed to wandb.init directly: Lightning's own `offline` rewrites WANDB_MODE process-wide.
            mode="offline" if offline else mode,
            **kwargs,
        )

    def finalize(self, status: str) -> None:
        super().finalize(status)
        if self._experiment is not None:
            self._experiment.finish()
            self._experiment = None


def _run_id(folder: Path) -> str:
    """A W&B run id that is stable for a run folder and distinct between folders."""
    digest = hashlib.sha1(str(folder).encode()).hexdigest()[:8]
    return f"{folder.parent.name}-{folder.name}-{digest}"[-64:]


class CSVLogger(_CSVLogger):
    """Lightning's CSV logger writing ``metrics.csv`` straight into the run folder."""

    def __init__(self, save_dir: Optional[str] = None, name: str = "", version: str = "", **kwargs: Any) -> None:
        super().__init__(save_dir=save_dir or ".", name=name, version=version, **kwargs)
