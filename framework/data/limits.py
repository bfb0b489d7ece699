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
            raise ConfigError(
                f"trainer.{key}={value} leaves {stage} nothing to run (it would end at once and exit as "
                "if it had worked): give a positive value, or leave it unset"
            )


def check_validation_interval(trainer: Any, train_batches: int) -> None:
    """An integer ``val_check_interval`` counts training batches within an epoch: more than the
    epoch has would never validate (Lightning stops with a traceback); refused here, naming the key."""
    interval, limit = getattr(trainer, "val_check_interval", None), getattr(trainer, "limit_train_batches", None)
    if isinstance(limit, int) and not isinstance(limit, bool):
        train_batches = min(train_batches, limit)
    elif isinstance(limit, float):
        train_batches = int(train_batches * limit)
    every_epoch = getattr(trainer, "check_val_every_n_epoch", 1) is not None
    if isinstance(interval, int) and not isinstance(interval, bool) and every_epoch and interval > train_batches > 0:
        raise ConfigError(
            f"trainer.val_check_interval={interval} is more than the {train_batches} training batches of "
            f"an epoch: give at most {train_batches}, a share in (0, 1], or set "
            "trainer.check_val_every_n_epoch=null to count batches across epochs"
        )
