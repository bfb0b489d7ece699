"""What the command line keeps from the user: messages of the libraries under it that the
framework causes or knows to be harmless, so that what a user must act on, and the run's summary,
are not buried.

* Lightning's tip to install ``litlogger`` (every run);
* Lightning's note that the trainer has a model summary already (the CLI gives every run its
  own, :class:`~framework.callbacks.ModelSummary`);
* a deprecation inside Lightning's ``_pytree`` helper that torch 2.11 warns about (every run);
* ``ModelCheckpoint``'s "dirpath has changed" when a test, predict or evaluate reads a fit's
  checkpoint from its own folder (nothing of the fit's checkpoint bookkeeping is needed there);
* torch's "No CUDA runtime is found" when ``torch.compile`` builds for the CPU on a machine
  without CUDA (the CPU build needs none);
* wandb's banners: offline, the framework says in one line where the run is and how to upload
  it; online, wandb stays quiet but for what matters (the run's address, errors).
"""

from __future__ import annotations

import logging
import warnings

#: Log lines dropped, by logger and a piece of their text.
DROPPED_LINES = {
    "lightning.pytorch.utilities.rank_zero": ("litlogger", "Skipping setting a default `ModelSummary` callback"),
    "lightning.pytorch.trainer.connectors.logger_connector.logger_connector": ("litlogger",),
    "torch.utils.cpp_extension": ("No CUDA runtime is found",),
}
#: Warnings ignored: (message pattern, category name).
WARNINGS = (r".*isinstance\(treespec, LeafSpec\)` is deprecated.*", r".*The dirpath has changed from .*")


class _Drop(logging.Filter):
    def __init__(self, texts: tuple[str, ...]) -> None:
        super().__init__()
        self.texts = texts

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(text in record.getMessage() for text in self.texts)


def install() -> None:
    """Filter this process's Lightning log and warnings (idempotent)."""
    for name, texts in DROPPED_LINES.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Drop) for f in logger.filters):
            logger.addFilter(_Drop(texts))
    for pattern in WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
