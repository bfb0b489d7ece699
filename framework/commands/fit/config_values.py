"""The domains of the keys whose classes this framework does not define: the trainer's
(Lightning's ``Trainer``), the optimizer's and the schedule's (``torch.optim``), declared here
in one table each, by key, as the types of :mod:`framework.values`.

Lightning and torch check some of these values late (``accumulate_grad_batches=0`` is a
ZeroDivisionError in the first step, a negative learning rate a ValueError from inside
``torch.optim`` without the key) and others never (a negative ``gradient_clip_val``). The
trainer's keys are added to the parser with these types in place of Lightning's; the
optimizer's and the schedule's, which a config names by class (``torch.optim.AdamW``), are
checked against their table as soon as the config is parsed. Either way a value outside its
domain is one line naming the key and the domain, and exit status 2.
"""

from __future__ import annotations

import typing
from typing import Any, Literal, Optional, Union, get_args, get_origin

from lightning.pytorch.profilers import Profiler

from ...errors import ConfigError
from ...values import (
    AllOrCount,
    AnyReal,
    BatchLimit,
    CheckInterval,
    Domain,
    Either,
    Fraction,
    Limit,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Probability,
    declare,
)

#: Adafactor's ``beta2_decay``, the exponent of its decay: never above 0.
NonPositiveFloat = declare("NonPositiveFloat", float, "a number <= 0", high=0)
#: A schedule's ``last_epoch``: -1 before the first step.
LastEpoch = declare("LastEpoch", int, "an int >= -1 (-1: not started)", low=-1)

#: Every precision Lightning 2.6 takes (``lightning.fabric.connector._PRECISION_INPUT``, flattened
#: into one list, so that an unknown one is answered with all of them).
Precision = Literal[
    "32-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true", "64-true", "transformer-engine",
    "transformer-engine-float16", 64, 32, 16, "64", "32", "16", "bf16",
]  # fmt: skip

#: The trainer's keys this framework types, with their domains (Lightning's default stays).
TRAINER: dict[str, Any] = {
    "accelerator": Literal["auto", "cpu", "gpu", "cuda", "mps", "tpu"],
    "devices": Union[Literal["auto"], AllOrCount, list[NonNegativeInt]],
    "num_nodes": PositiveInt,
    "precision": Optional[Precision],
    "fast_dev_run": Union[bool, NonNegativeInt],
    "max_epochs": Optional[Limit],
    "min_epochs": Optional[NonNegativeInt],
    "max_steps": Limit,
    "min_steps": Optional[NonNegativeInt],
    "limit_train_batches": Optional[BatchLimit],
    "limit_val_batches": Optional[BatchLimit],
    "limit_test_batches": Optional[BatchLimit],
    "limit_predict_batches": Optional[BatchLimit],
    "overfit_batches": BatchLimit,
    "val_check_interval": Optional[CheckInterval],
    "check_val_every_n_epoch": Optional[PositiveInt],
    "num_sanity_val_steps": Optional[AllOrCount],
    "log_every_n_steps": Optional[PositiveInt],
    "accumulate_grad_batches": PositiveInt,
    "gradient_clip_val": Optional[NonNegativeFloat],
    "gradient_clip_algorithm": Optional[Literal["norm", "value"]],
    "reload_dataloaders_every_n_epochs": NonNegativeInt,
    "profiler": Optional[Union[Literal["simple", "advanced", "pytorch", "xla"], Profiler]],
}

#: The optimizers' keys (``--optimizer.init_args.<key>``), by name, whichever optimizer has them.
OPTIMIZER: dict[str, Any] = {
    "lr": NonNegativeFloat,
    "weight_decay": NonNegativeFloat,
    "momentum": NonNegativeFloat,
    "dampening": NonNegativeFloat,
    "eps": PositiveFloat,
    "alpha": NonNegativeFloat,
    "rho": Probability,
    "betas": tuple[Fraction, Fraction],
    "lr_decay": NonNegativeFloat,
    "initial_accumulator_value": NonNegativeFloat,
    "momentum_decay": NonNegativeFloat,
    "lambd": NonNegativeFloat,
    "t0": NonNegativeFloat,
    "etas": tuple[Fraction, PositiveFloat],
    "step_sizes": tuple[NonNegativeFloat, PositiveFloat],
    "max_iter": PositiveInt,
    "max_eval": Optional[PositiveInt],
    "tolerance_grad": NonNegativeFloat,
    "tolerance_change": NonNegativeFloat,
    "history_size": PositiveInt,
    "line_search_fn": Optional[Literal["strong_wolfe"]],
    "ns_steps": PositiveInt,
    "adjust_lr_fn": Optional[Literal["original", "match_rms_adamw"]],
    "ns_coefficients": tuple[AnyReal, AnyReal, AnyReal],
    "beta2_decay": NonPositiveFloat,
    "d": PositiveFloat,
}

#: The schedules' keys (``--lr_scheduler.init_args.<key>``), by name.
SCHEDULE: dict[str, Any] = {
    "step_size": PositiveInt,
    "gamma": PositiveFloat,
    "milestones": list[NonNegativeInt],
    "T_max": PositiveInt,
    "T_0": PositiveInt,
    "T_mult": PositiveInt,
    "eta_min": NonNegativeFloat,
    "max_lr": Union[PositiveFloat, list[PositiveFloat]],
    "base_lr": Union[NonNegativeFloat, list[NonNegativeFloat]],
    "total_steps": Optional[PositiveInt],
    "epochs": Optional[PositiveInt],
    "steps_per_epoch": Optional[PositiveInt],
    "pct_start": Probability,
    "anneal_strategy": Literal["cos", "linear"],
    "div_factor": PositiveFloat,
    "final_div_factor": PositiveFloat,
    "warmup_steps": NonNegativeInt,
    "factor": PositiveFloat,
    "start_factor": PositiveFloat,
    "end_factor": NonNegativeFloat,
    "total_iters": NonNegativeInt,
    "power": NonNegativeFloat,
    "patience": NonNegativeInt,
    "threshold": NonNegativeFloat,
    "threshold_mode": Literal["rel", "abs"],
    "cooldown": NonNegativeInt,
    "min_lr": Union[NonNegativeFloat, list[NonNegativeFloat]],
    "eps": NonNegativeFloat,
    "mode": Literal["min", "max", "triangular", "triangular2", "exp_range"],
    "step_size_up": PositiveInt,
    "step_size_down": Optional[PositiveInt],
    "scale_mode": Literal["cycle", "iterations"],
    "cycle_momentum": bool,
    "base_momentum": Union[NonNegativeFloat, list[NonNegativeFloat]],
    "max_momentum": Union[NonNegativeFloat, list[NonNegativeFloat]],
    "three_phase": bool,
    "last_epoch": LastEpoch,
}


def expected(kind: Any) -> str:
    """A type's domain in words: ``an int >= 1``, ``one of 'norm', 'value'``, ``null or ...``."""
    origin, args = get_origin(kind), get_args(kind)
    if isinstance(kind, type) and issubclass(kind, (Domain, Either)):
        return kind.expected
    if origin is Literal:
        return "one of " + ", ".join(map(repr, args))
    if origin is Union:
        said = [expected(arg) for arg in args if arg is not type(None)]
        return ("null or " if type(None) in args else "") + " or ".join(said)
    if origin in (tuple, list):
        parts = [expected(arg) for arg in args if arg is not Ellipsis]
        return f"[{', '.join(parts)}]" if origin is tuple else f"a list, each {parts[0]}"
    if kind is bool:
        return "true or false"
    return getattr(kind, "__name__", str(kind))


def accepts(kind: Any, value: Any) -> bool:
    """Whether ``value`` (as parsed: numbers, strings, lists) lies in the domain ``kind``."""
    origin, args = get_origin(kind), get_args(kind)
    if kind is type(None):
        return value is None
    if isinstance(kind, type) and issubclass(kind, (Domain, Either)):
        try:
            kind.check(value)
        except ValueError:
            return False
        return True
    if origin is Literal:
        return value in args and not isinstance(value, bool)
    if origin is Union:
        return any(accepts(arg, value) for arg in args)
    if origin is tuple:
        return isinstance(value, (list, tuple)) and len(value) == len(args) and all(map(accepts, args, value))
    if origin is list:
        return isinstance(value, (list, tuple)) and all(accepts(args[0], item) for item in value)
    if kind is bool:
        return isinstance(value, bool)
    return isinstance(kind, type) and isinstance(value, kind)


def section_values(section: Any) -> dict[str, Any]:
    """The ``init_args`` of a parsed ``optimizer`` or ``lr_scheduler`` section, as plain values."""
    args = section.get("init_args") if section is not None and hasattr(section, "get") else None
    if args is None:
        return {}
    return args.as_dict() if hasattr(args, "as_dict") else dict(args)


def violations(config: Any) -> list[str]:
    """What of a parsed config's optimizer and schedule lies outside its table's domains, each as
    ``<section>.<key>: expected <domain>, got <value>``."""
    found = []
    for section, table in (("optimizer", OPTIMIZER), ("lr_scheduler", SCHEDULE)):
        for key, value in section_values(config.get(section)).items():
            if key in table and not accepts(table[key], value):
                found.append(f"{section}.{key}: expected {expected(table[key])}, got {value!r}")
    return found


def has_domain(kind: Any) -> bool:
    """Whether a type is, or holds, a declared domain (a type of :mod:`framework.values`, a Literal)."""
    if isinstance(kind, type) and issubclass(kind, (Domain, Either)):
        return True
    return get_origin(kind) is Literal or any(has_domain(arg) for arg in get_args(kind))


def annotation(class_path: str, name: str) -> Any:
    """The annotation of the argument ``name`` of the class at ``class_path`` (None where there is none)."""
    import importlib

    module, _, attr = class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr)
        return typing.get_type_hints(cls.__init__).get(name)
    except Exception:  # noqa: BLE001 - an error message is being written: no domain rather than a second error
        return None


def declared_domain(key: str) -> Optional[str]:
    """The declared domain, in words, of a trainer's, optimizer's or schedule's key as the parser
    names it (``optimizer.lr``, ``trainer.devices``); None for another key."""
    parts = [part for part in key.split(".") if part != "init_args"]
    table = {"optimizer": OPTIMIZER, "lr_scheduler": SCHEDULE, "trainer": TRAINER}.get(parts[0])
    kind = table.get(parts[-1]) if table is not None and len(parts) == 2 else None
    return None if kind is None else expected(kind)


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


def check_machine(config: Any) -> None:
    """A :class:`ConfigError` when this machine cannot run what the config asks (:func:`accelerator_problem`)."""
    if problem := accelerator_problem(config.trainer):
        raise ConfigError(problem)
