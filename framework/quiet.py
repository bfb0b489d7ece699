"""What the command line keeps from the user: messages of the libraries under it that the
framework causes or knows to be harmless, so that what a user must act on, and the run's summary,
are not buried.

* Lightning's tip to install ``litlogger`` (every run);
* a deprecation inside Lightning's ``_pytree`` helper that torch 2.11 warns about (every run);
* ``ModelCheckpoint``'s "dirpath has changed" when a test, predict or evaluate reads a fit's
  checkpoint from its own folder (nothing of the fit's checkpoint bookkeeping is needed there);
* wandb's banners: offline, the framework says in one line where the run is and how to upload
  it; online, wandb stays quiet but for what matters (the run's address, errors).
"""

from __future__ import annotations

import logging
import warnings

#: Lightning's log lines dropped, by a piece of their text.
LIGHTNING_LINES = ("litlogger",)
#: Warnings ignored: (message pattern, category name).
WARNINGS = (r".*isinstance\(treespec, LeafSpec\)` is deprecated.*", r".*The dirpath has changed from .*")


class _Drop(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not any(text in record.getMessage() for text in LIGHTNING_LINES)


def install() -> None:
    """Filter this process's Lightning log and warnings (idempotent)."""
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.pytorch.trainer.connectors.logger_connector.logger_connector"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Drop) for f in logger.filters):
            logger.addFilter(_Drop())
    for pattern in WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
