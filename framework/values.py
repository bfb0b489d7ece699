"""The domains of config values, declared as types.

A parameter that the command line fills states its domain in its annotation, once, where it is
defined (``depth: PositiveInt = 2``, ``dropout: Fraction = 0.1``, ``mode: Literal["min", "max"]``);
the config parser refuses a value outside it before anything is built, naming the key and the
domain, and ``--help`` shows the domain's name as the type::

    error: model.dropout: expected a number in [0, 1), got 1.5

Each type here is an ``int`` or ``float`` subclass registered with jsonargparse: the parser calls
it on the raw value (a YAML number, or the string of a flag) and keeps the plain number it
returns, so a parsed config holds ``int`` and ``float`` only (checkpoints store them as such).
A bool is never a number here, a float is never an int (``2.0`` is refused where an int is
expected: a count is written ``2``), and neither NaN nor infinity is in a domain. Python
callers are not checked by these annotations: the classes check themselves what no type says
(one size against another).

The tests read these declarations: every numeric or choice key the command line accepts must
have one (``tests/test_config_domains.py``), and values drawn outside each domain must be
refused in one or two lines naming the key.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, Optional

from jsonargparse.typing import register_type

INTEGER = re.compile(r"[+-]?\d+")


class Domain:
    """What the types below share: ``expected``, the domain in words ("an int >= 1"), and
    :meth:`check`, which returns the value as a plain number or raises ``ValueError`` saying it."""

    expected: ClassVar[str] = ""
    base: ClassVar[type] = int
    low: ClassVar[Optional[float]] = None
    high: ClassVar[Optional[float]] = None
    low_open: ClassVar[bool] = False
    high_open: ClassVar[bool] = False

    @classmethod
    def check(cls, value: Any) -> Any:
        number = cls.number(value)
        if number is None or not cls.within(number):
            raise ValueError(f"expected {cls.expected}, got {value!r}")
        return number

    @classmethod
    def number(cls, value: Any) -> Optional[float]:
        """``value`` as the type's base number, or None when it is not one (a bool, a string that
        is not a number, a float where an int is expected, NaN)."""
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            text = value.strip()
            if cls.base is int:
                return int(text) if INTEGER.fullmatch(text) else None
            try:
                value = float(text)
            except ValueError:
                return None
        if cls.base is int:
            return int(value) if isinstance(value, int) else None
        if not isinstance(value, (int, float)) or math.isnan(value):
            return None
        return float(value)

    @classmethod
    def within(cls, number: float) -> bool:
        """Whether a number lies in the domain: finite, and between its ends."""
        if not math.isfinite(number):
            return False
        if cls.low is not None and (number < cls.low or (cls.low_open and number == cls.low)):
            return False
        return cls.high is None or not (number > cls.high or (cls.high_open and number == cls.high))


def declare(
    name: str,
    base: type,
    expected: str,
    low: Optional[float] = None,
    high: Optional[float] = None,
    low_open: bool = False,
    high_open: bool = False,
) -> type:
    """A new domain type: ``base`` (int or float) values in [low, high] (an open end where asked),
    ``expected`` the domain in words; registered with the config parser."""

    def new(cls: type, value: Any) -> Any:
        return base.__new__(cls, cls.check(value))

    kind = type(
        name,
        (Domain, base),
        {
            "__new__": new,
            "expected": expected,
            "base": base,
            "low": low,
            "high": high,
            "low_open": low_open,
            "high_open": high_open,
            "__module__": __name__,
            "__doc__": f"{expected[0].upper()}{expected[1:]}.",
        },
    )
    register_type(kind, serializer=base, deserializer=kind.check)
    return kind


PositiveInt = declare("PositiveInt", int, "an int >= 1", low=1)
NonNegativeInt = declare("NonNegativeInt", int, "an int >= 0", low=0)
Seed = declare("Seed", int, "an int in [0, 4294967295]", low=0, high=2**32 - 1)
PositiveFloat = declare("PositiveFloat", float, "a number > 0", low=0, low_open=True)
NonNegativeFloat = declare("NonNegativeFloat", float, "a number >= 0", low=0)
Probability = declare("Probability", float, "a number in [0, 1]", low=0, high=1)
Fraction = declare("Fraction", float, "a number in [0, 1)", low=0, high=1, high_open=True)
OpenFraction = declare("OpenFraction", float, "a number in (0, 1)", low=0, high=1, low_open=True, high_open=True)
AnyReal = declare("AnyReal", float, "a finite number")
AnyInt = declare("AnyInt", int, "an int")
#: A classifier's classes (a task's ``num_classes``): two at least.
ClassCount = declare("ClassCount", int, "an int >= 2 (classes)", low=2)
#: ``trainer.max_epochs`` and ``max_steps``: -1 for no limit.
Limit = declare("Limit", int, "an int >= -1 (-1: no limit)", low=-1)
#: ``trainer.num_sanity_val_steps`` and ``devices``, ``checkpoint.save_top_k``: -1 for all of them.
AllOrCount = declare("AllOrCount", int, "an int >= -1 (-1: all)", low=-1)


class Either:
    """A domain of two numeric kinds, tried in order: an int count, else a float share (a
    trainer's batch limits, ``1`` is one batch, ``1.0`` all of them)."""

    expected: ClassVar[str] = ""
    kinds: ClassVar[tuple[type, ...]] = ()

    @classmethod
    def check(cls, value: Any) -> Any:
        for kind in cls.kinds:
            try:
                return kind.check(value)
            except ValueError:
                continue
        raise ValueError(f"expected {cls.expected}, got {value!r}")


def either(name: str, expected: str, *kinds: type) -> type:
    """A registered domain of the first of ``kinds`` that takes a value."""
    kind = type(
        name,
        (Either,),
        {
            "expected": expected,
            "kinds": kinds,
            "__module__": __name__,
            "__doc__": f"{expected[0].upper()}{expected[1:]}.",
        },
    )
    register_type(kind, serializer=lambda value: value, deserializer=kind.check)
    return kind


BatchLimit = either(
    "BatchLimit", "an int >= 0 (batches) or a float in [0, 1] (a share of them)", NonNegativeInt, Probability
)
CheckInterval = either(
    "CheckInterval",
    "an int >= 1 (batches) or a float in (0, 1] (a share of an epoch)",
    PositiveInt,
    declare("ShareOfEpoch", float, "a number in (0, 1]", low=0, high=1, low_open=True),
)

#: Every domain type, by name (what ``--help`` shows as the type).
DOMAINS: dict[str, type] = {
    kind.__name__: kind
    for kind in (
        PositiveInt,
        NonNegativeInt,
        Seed,
        PositiveFloat,
        NonNegativeFloat,
        Probability,
        Fraction,
        OpenFraction,
        AnyReal,
        AnyInt,
        Limit,
        BatchLimit,
        CheckInterval,
    )
}


def argument(kind: type) -> Any:
    """A domain as an ``argparse`` type (``type=argument(PositiveInt)``): the value checked, an
    error saying the domain ("argument --trials: expected an int >= 1, got '0'")."""
    import argparse

    def parse(text: str) -> Any:
        try:
            return kind.check(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = kind.__name__
    parse.domain = kind
    return parse
