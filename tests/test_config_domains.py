"""Every key the command line accepts has a declared domain, and a value outside it is refused.

The keys are read from the parsers (``tests/config_keys.py``); a numeric or choice key must be
typed with a domain of :mod:`framework.values`, a ``Literal`` or a bool, or be on the short,
explained list of free-form keys (folders, names, patterns). The keys of torch's optimizers and
schedules are declared by name in :mod:`framework.commands.fit.config_values`.
"""

from __future__ import annotations

import typing

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framework.commands.fit.config_values import OPTIMIZER, SCHEDULE, TRAINER
from framework.values import Domain, Either
from tests.config_keys import (
    FREE_FORM,
    ROOT,
    class_keys,
    configurable_classes,
    declared,
    fit_parser,
    free_form,
    parsing_cli,
    torch_classes,
    walk,
)


def undeclared(keys) -> list[str]:
    return [f"{key.where}: {key.name} ({key.kind})" for key in keys if not declared(key.kind) and not free_form(key)]


def test_the_fit_commands_own_keys_have_declared_domains():
    """The top level's, the trainer's and the callbacks' sections."""
    assert undeclared(walk(fit_parser(), "fit")) == []


@pytest.mark.parametrize("cls", configurable_classes(), ids=lambda cls: cls.__qualname__)
def test_every_key_of_a_class_a_config_names_has_a_declared_domain(cls):
    assert undeclared(class_keys(cls)) == []


def test_the_optimizers_and_schedules_keys_are_declared_by_name():
    """torch's classes keep their types; their keys' domains are declared by name, in a table."""
    optimizers, schedules = torch_classes()
    missing = [
        f"{cls.__name__}.{key.name} ({key.kind})"
        for table, classes in ((OPTIMIZER, optimizers), (SCHEDULE, schedules))
        for cls in classes
        for key in class_keys(cls)
        if key.name not in (*table, "params", "optimizer") and not declared(key.kind) and not free_form(key)
    ]
    assert missing == []


def test_every_trainer_key_lightning_types_as_a_number_is_declared():
    from lightning.pytorch import Trainer

    hints = typing.get_type_hints(Trainer.__init__)
    numeric = [
        name for name, kind in hints.items() if not declared(kind) and name not in FREE_FORM and name != "return"
    ]
    assert [name for name in numeric if name not in TRAINER] == []


def test_the_free_form_list_names_keys_that_exist():
    keys = [*walk(fit_parser(), "fit"), *(key for cls in configurable_classes() for key in class_keys(cls))]
    full = [f"{key.where}.{key.name}" for key in keys]
    assert [entry for entry in FREE_FORM if not any(name.endswith("." + entry) for name in full)] == []


# --- values drawn outside each domain are refused; values inside are honoured ---------------------

#: Configs whose model, task and data keys the property test draws from: one per domain (their
#: classes cover each domain's kinds of model, task and data).
CONFIGS = {
    "demo": "domains/demo/demo.yaml",
    "vision": "domains/vision/ccnet.yaml",
    "nlp": "domains/nlp/seq2seq_bahdanau.yaml",
    "audio": "domains/audio/cnn.yaml",
    "graph": "domains/graph/gat.yaml",
    "recommender": "domains/recommender/sasrec.yaml",
    "memory": "domains/memory/memn2n.yaml",
}


def domain_of(kind):
    """The domain type inside ``Optional[...]`` (a Domain, Either or Literal), else None."""
    args = [arg for arg in typing.get_args(kind) if arg is not type(None)]
    if typing.get_origin(kind) is typing.Union and len(args) == 1:
        kind = args[0]
    if typing.get_origin(kind) is typing.Literal or (isinstance(kind, type) and issubclass(kind, (Domain, Either))):
        return kind
    return None


def section_class(config: str, section: str):
    """The class a config's section names (a ``data:`` that names a file is read from it)."""
    import importlib

    content = yaml.safe_load((ROOT / config).read_text())[section]
    if isinstance(content, str):
        content = yaml.safe_load(((ROOT / config).parent / content).read_text())
    module, _, name = content["class_path"].rpartition(".")
    return getattr(importlib.import_module(module), name)


def drawn_keys() -> list[tuple[str, str, typing.Any]]:
    """(config, key as a flag names it, domain) of every key with a domain: the fit parser's own,
    with the demo's config, and each domain config's model, task and data."""
    found = [(CONFIGS["demo"], key.name, domain_of(key.kind)) for key in walk(fit_parser(), "fit")]
    for config in CONFIGS.values():
        for section in ("model", "task", "data"):
            found += [
                (config, f"{section}.{key.name}", domain_of(key.kind))
                for key in class_keys(section_class(config, section))
            ]
    return [(config, name, kind) for config, name, kind in found if kind is not None]


def outside(kind) -> st.SearchStrategy:
    """Values outside a domain, as a flag would give them: beyond each end, NaN, infinities,
    the wrong kind, unknown words."""
    if typing.get_origin(kind) is typing.Literal:
        return st.sampled_from(["unknown", "NONE", "x" * 40, "1e9"]).filter(
            lambda word: word not in map(str, typing.get_args(kind))
        )
    kinds = kind.kinds if issubclass(kind, Either) else (kind,)
    values = ["nan", "inf", "-inf", "abc", "true", "[1, 2]", "1e400"]
    low = min((k.low for k in kinds if k.low is not None), default=None)
    high = max((k.high for k in kinds if k.high is not None), default=None)
    if low is not None:
        values += [str(low - 1), str(low - 10**12)] + ([str(low)] if all(k.low_open for k in kinds) else [])
    if high is not None:
        values += [str(high + 1), str(high * 10**12 + 10**12)]
    if all(k.base is int for k in kinds):
        values += ["2.5", "1.0" if not issubclass(kind, Either) else "2.5"]
    return st.sampled_from([value for value in values if not _inside(kind, value)])


def inside(kind) -> st.SearchStrategy:
    if typing.get_origin(kind) is typing.Literal:
        return st.sampled_from([arg for arg in typing.get_args(kind) if isinstance(arg, str)] or typing.get_args(kind))
    kinds = kind.kinds if issubclass(kind, Either) else (kind,)
    first = kinds[0]
    low = first.low if first.low is not None else -100
    high = first.high if first.high is not None else low + 1000
    if first.base is int:
        return st.integers(int(low) + first.low_open, int(high) - first.high_open).map(str)
    return st.floats(low, high, exclude_min=first.low_open, exclude_max=first.high_open).map(repr)


def _inside(kind, value: str) -> bool:
    try:
        kind.check(value)
    except ValueError:
        return False
    return True


@pytest.fixture
def as_a_user_sees_it(monkeypatch):
    """Errors shown as a user sees them (the suite's conftest asks for tracebacks)."""
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)


def parse(capsys, config: str, flag: str):
    """The parse of ``fit --config <config> <flag>``: the parsed config, or the SystemExit and the message."""
    cli = parsing_cli()
    capsys.readouterr()
    try:
        cli.parse_arguments(cli.parser, ["fit", "--config", str(ROOT / config), flag])
    except SystemExit as stop:
        return stop, capsys.readouterr().err
    return cli.config["fit"], ""


KEYS = drawn_keys()


@pytest.mark.slow
@settings(
    max_examples=250,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_value_outside_its_domain_is_refused_in_one_line_naming_the_key(as_a_user_sees_it, capsys, data):
    config, name, kind = data.draw(st.sampled_from(KEYS), label="key")
    value = data.draw(outside(kind), label="value")
    stop, message = parse(capsys, config, f"--{name}={value}")
    assert isinstance(stop, SystemExit) and stop.code == 2, f"--{name}={value} was taken"
    lines = message.strip().splitlines()
    shown = name.replace(".init_args", "")
    assert len(lines) <= 2 and lines[0].startswith(f"error: {shown}: expected "), message


@pytest.mark.slow
@settings(
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_value_inside_its_domain_is_taken_as_given(capsys, data):
    config, name, kind = data.draw(st.sampled_from(KEYS), label="key")
    value = data.draw(inside(kind), label="value")
    parsed, message = parse(capsys, config, f"--{name}={value}")
    assert not isinstance(parsed, SystemExit), message
    section, _, key = name.partition(".")
    got = parsed[section].init_args[key] if section in ("model", "task", "data") and key else parsed[name]
    assert got == (kind.check(value) if typing.get_origin(kind) is not typing.Literal else value)


def test_compares_options_have_declared_domains():
    """compare's own options (argparse): a number is typed with a domain, a word with its choices,
    and the rest is free-form by nature (config keys, cell names, patterns, flags)."""
    from framework.commands.compare.command import parser

    free = {
        "grid",
        "cells",
        "search",
        "verify",
        "name",
        "submitit",
        "baseline",
        "metric",
        "metrics",
        "train_metric",
        "test_override",
        "help",
    }
    undeclared = [
        action.dest
        for action in parser()._actions
        if action.nargs != 0
        and action.choices is None
        and not hasattr(action.type, "domain")
        and action.dest not in free
    ]
    assert undeclared == []
