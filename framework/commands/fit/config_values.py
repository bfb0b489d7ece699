"""Trainer, optimizer and schedule values checked when the config is parsed, naming the key.

Lightning and torch check some of these values late (``accumulate_grad_batches=0`` is a
ZeroDivisionError in the first step, a negative learning rate a ValueError from inside
``torch.optim`` without the key) and others never (a negative ``gradient_clip_val``). The
command line checks them all before anything is built, in one table: a key, the range its
values must lie in, and what it means.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

from ...errors import ConfigError


class Rule(NamedTuple):
    """Values a key accepts: ``accepts(value)``, said as ``expected`` in the error."""

    accepts: Callable[[Any], bool]
    expected: str


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def at_least(low: float, what: str = "") -> Rule:
    return Rule(lambda v: _number(v) and v >= low, f"a number >= {low:g}{what}")


def above(low: float, what: str = "") -> Rule:
    return Rule(lambda v: _number(v) and v > low, f"a number > {low:g}{what}")


def count_or_share(low_count: int, share_open_at_zero: bool) -> Rule:
    """An int >= ``low_count`` (a count) or a float in [0, 1] ((0, 1] if ``share_open_at_zero``)."""

    def accepts(value: Any) -> bool:
        if isinstance(value, bool) or not _number(value):
            return False
        if isinstance(value, int):
            return value >= low_count
        return (0 < value <= 1) if share_open_at_zero else (0 <= value <= 1)

    share = "(0, 1]" if share_open_at_zero else "[0, 1]"
    return Rule(accepts, f"an int >= {low_count} (batches) or a float in {share} (a share of them)")


def probability_pair(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(_number(b) and 0 <= b < 1 for b in value)


#: key -> rule; a key that is unset (None) or absent is not checked.
TRAINER = {
    "max_epochs": at_least(-1, " (-1: no limit)"),
    "min_epochs": at_least(0),
    "max_steps": at_least(-1, " (-1: no limit)"),
    "min_steps": at_least(0),
    "accumulate_grad_batches": at_least(1),
    "check_val_every_n_epoch": at_least(1),
    "log_every_n_steps": at_least(1),
    "num_sanity_val_steps": at_least(-1, " (-1: all)"),
    "gradient_clip_val": at_least(0),
    "num_nodes": at_least(1),
    "val_check_interval": count_or_share(1, share_open_at_zero=True),
    **{
        f"limit_{stage}_batches": count_or_share(0, share_open_at_zero=False)
        for stage in ("train", "val", "test", "predict")
    },
}
OPTIMIZER = {
    "lr": at_least(0),
    "weight_decay": at_least(0),
    "momentum": at_least(0),
    "dampening": at_least(0),
    "eps": above(0),
    "alpha": at_least(0),
    "rho": Rule(lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "betas": Rule(probability_pair, "two numbers in [0, 1), as [0.9, 0.999]"),
}
SCHEDULE = {
    "step_size": at_least(1),
    "gamma": above(0),
    "T_max": above(0),
    "T_0": at_least(1),
    "total_steps": at_least(1),
    "max_lr": above(0),
    "warmup_steps": at_least(0),
    "eta_min": at_least(0),
    "factor": above(0),
    "patience": at_least(0),
}


def _init_args(section: Any) -> dict:
    if section is None:
        return {}
    args = section.get("init_args") if hasattr(section, "get") else None
    if args is None:
        return {}
    return args.as_dict() if hasattr(args, "as_dict") else dict(args)


def violations(config: Any) -> list[str]:
    """Every value of a parsed config (trainer, optimizer, lr_scheduler) outside its rule."""
    found = []
    sections: list[tuple[str, dict, dict]] = [
        ("trainer", TRAINER, config.trainer.as_dict() if hasattr(config.trainer, "as_dict") else dict(config.trainer)),
        ("optimizer", OPTIMIZER, _init_args(config.get("optimizer"))),
        ("lr_scheduler", SCHEDULE, _init_args(config.get("lr_scheduler"))),
    ]
    for prefix, rules, values in sections:
        for key, rule in rules.items():
            value = values.get(key)
            if value is not None and not rule.accepts(value):
                found.append(f"{prefix}.{key} must be {rule.expected}, got {value!r}")
    return found


def accelerator_problem(trainer: Any) -> Optional[str]:
    """What makes ``trainer.accelerator`` impossible on this machine (a GPU asked for, none there)."""
    import torch

    accelerator = str(trainer.get("accelerator") or "auto")
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        return (
            f"trainer.accelerator={accelerator}, but torch finds no CUDA GPU on this machine "
            f"(torch {torch.__version__}): use cpu or auto, or drop the GPU preset"
        )
    if accelerator == "mps" and not torch.backends.mps.is_available():
        return "trainer.accelerator=mps, but this machine has no MPS device: use cpu or auto"
    return None


def check_values(config: Any) -> None:
    """Raise a :class:`ConfigError` for the first value :func:`violations` finds, or an accelerator
    this machine lacks."""
    if problem := accelerator_problem(config.trainer):
        raise ConfigError(problem)
    found = violations(config)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ConfigError(found[0] + more)
