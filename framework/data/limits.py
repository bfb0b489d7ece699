"""Trainer limits that leave a stage nothing to read: refused, naming the key.

``--trainer.limit_train_batches=0`` or ``--trainer.max_epochs=0`` makes Lightning skip training,
print next to nothing and exit 0, as if the run had worked; the same goes for a ``validate``,
``test`` or ``predict`` whose batch limit is 0. :func:`check_limits` turns them into an error
naming the key. :class:`~framework.data.SplitDataModule` calls it when the trainer sets it up
for a stage (before any loop runs); ``fast_dev_run`` sets limits of its own and is left alone.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

#: Per stage, the trainer keys whose value 0 leaves it nothing to run.
NOTHING_AT_ZERO = {
    "fit": ("limit_train_batches", "max_epochs", "max_steps"),
    "validate": ("limit_val_batches",),
    "test": ("limit_test_batches",),
    "predict": ("limit_predict_batches",),
}


def check_limits(stage: str, trainer: Any) -> None:
    """Raise a :class:`ConfigError` naming the first key of :data:`NOTHING_AT_ZERO` for ``stage``
    that ``trainer`` (a Lightning ``Trainer``, or a config with the same attribute names) sets to 0."""
    stage = getattr(stage, "value", stage)  # Lightning's TrainerFn: "fit", "validate" ...
    if getattr(trainer, "fast_dev_run", False):
        return
    for key in NOTHING_AT_ZERO.get(stage, ()):
        value = getattr(trainer, key, None)
        if value is not None and value == 0:
            raise ConfigError(f"trainer.{key}={value} leaves {stage} nothing to run (it would end at once and exit as "
                              "if it had worked): give a positive value, or leave it unset")
