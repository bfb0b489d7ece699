"""The resume contract: ``fit --ckpt_path`` continues the run the checkpoint belongs to, and that
run stays one run.

A fit records its whole resolved config in its checkpoints (the config a ``config.yaml`` holds,
without the run's own folders). A fit resumed from one compares the config it would run with
against that record, key by key:

* a change that keeps the run one run, a key of :data:`RESUMABLE` (more epochs, the devices and
  nodes, the loggers, progress, pictures, statistics and resume points ...), is taken, and
  ``summary.json`` says it changed at the step the run resumed at (``changes``);
* every other change (a learning rate, a batch size, a seed, a data size, the model, the task
  ...) is refused in one line naming each key with its recorded and its new value, and saying
  how to start a new run from these weights (``--weights_from``), which is what such a change
  asks for.

So ``config.yaml`` and ``summary.json`` never claim a value the run did not use.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, NamedTuple

from torch import nn

from ...checkpoint import read_checkpoint, read_checkpoint_configs
from ...errors import CheckpointError, ConfigError

#: The keys whose change keeps a resumed run one run (glob patterns over the dotted keys, without
#: ``init_args``), with why: they say how long, where and how visibly it runs, not what it learns.
RESUMABLE: dict[str, str] = {
    "trainer.max_epochs": "how long it trains",
    "trainer.min_epochs": "how long it trains",
    "trainer.max_steps": "how long it trains",
    "trainer.min_steps": "how long it trains",
    "trainer.max_time": "how long it trains",
    "early_stopping.*": "how long it trains",
    "trainer.devices": "where it runs",
    "trainer.num_nodes": "where it runs",
    "trainer.accelerator": "where it runs",
    "trainer.strategy": "where it runs",
    "data.num_workers": "how its batches are loaded",
    "trainer.logger": "where it is logged",
    "trainer.logger.*": "where it is logged",
    "trainer.log_every_n_steps": "how often it is logged",
    "trainer.enable_progress_bar": "what it prints",
    "trainer.enable_model_summary": "what it prints",
    "trainer.profiler": "what it measures",
    "trainer.callbacks": "what watches it",
    "attention_maps.*": "the pictures it draws",
    "attention_stats.*": "the statistics it logs",
    "attention_collapse.*": "what it warns of",
    "resume.*": "how often it can be resumed",
    "checkpoint.verbose": "what it prints",
    "traceback": "how errors are shown",
}


class Change(NamedTuple):
    """One key whose value differs from the run's record."""

    key: str
    recorded: Any
    given: Any


def flat(config: Any, prefix: str = "") -> dict[str, Any]:
    """A config's values by dotted key (``optimizer.lr``: ``init_args`` left out); a list is one value."""
    if not isinstance(config, dict):
        return {prefix: config}
    found: dict[str, Any] = {}
    for key, value in config.items():
        name = prefix if key == "init_args" else f"{prefix}.{key}" if prefix else str(key)
        found.update(flat(value, name) if isinstance(value, dict) and value else {name: value})
    return found


#: Keys a resumed fit does not compare: where the run's first weights came from (a resume takes
#: them from its checkpoint, and need not say it again).
NOT_COMPARED = ("weights_from",)


def changes(recorded: dict[str, Any], given: dict[str, Any]) -> list[Change]:
    """The keys whose values differ between two resolved configs, in key order."""
    old, new = flat(recorded), flat(given)
    keys = sorted((old.keys() | new.keys()) - set(NOT_COMPARED))
    return [Change(key, old.get(key), new.get(key)) for key in keys if old.get(key) != new.get(key)]


def resumable(key: str) -> bool:
    return any(fnmatchcase(key, pattern) for pattern in RESUMABLE)


def check_resume(recorded: dict[str, Any], given: dict[str, Any], ckpt_path: str) -> list[Change]:
    """The changes a resumed fit takes (all of :data:`RESUMABLE`); a :class:`ConfigError` naming
    every other change, with both values, and how to start a new run from the weights instead."""
    found = changes(recorded, given)
    refused = [change for change in found if not resumable(change.key)]
    if refused:
        said = "; ".join(f"{c.key}: the run has {c.recorded!r}, given {c.given!r}" for c in refused)
        raise ConfigError(
            f"fit --ckpt_path {ckpt_path} resumes a run, which keeps its config ({said}): drop the change, "
            f"or start a new run from these weights with --weights_from {ckpt_path} instead of --ckpt_path"
        )
    return found


def recorded_config(ckpt_path: str) -> dict[str, Any] | None:
    """The resolved config a checkpoint's run recorded (None in a checkpoint of an older version)."""
    run = read_checkpoint_configs(Path(ckpt_path)).get("run")
    return run if isinstance(run, dict) else None


def load_weights(model: nn.Module, ckpt_path: str) -> None:
    """``--weights_from``: the model's weights from a checkpoint of this framework (a new run starts
    from them: its own optimizer, schedule, epochs and folder); an error naming the file where its
    model is another."""
    state = read_checkpoint(Path(ckpt_path), "--weights_from")["state_dict"]
    weights = {key.removeprefix("model."): value for key, value in state.items() if key.startswith("model.")}
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise CheckpointError(
            f"--weights_from {ckpt_path}: its model is not this config's ({str(err).splitlines()[0]})"
        ) from None
