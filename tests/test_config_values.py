"""The declared domains of the trainer's, optimizer's and schedule's keys (``config_values``), refused
when the config is parsed, naming the key; a section that names another class starts from that
class's defaults."""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonargparse import Namespace

from framework.__main__ import main
from framework.commands.fit.config_values import OPTIMIZER, SCHEDULE, TRAINER, accepts, expected, violations
from framework.values import BatchLimit, Fraction, NonNegativeFloat, PositiveInt


def config(optimizer: dict = None, lr_scheduler: dict = None) -> Namespace:
    section = lambda args: None if args is None else Namespace(class_path="x.Y", init_args=Namespace(**args))
    return Namespace(optimizer=section(optimizer), lr_scheduler=section(lr_scheduler))


#: key -> whether a value is allowed, written out independently of the tables.
RANGES = {
    "optimizer.lr": lambda v: v >= 0,
    "optimizer.weight_decay": lambda v: v >= 0,
    "optimizer.eps": lambda v: v > 0,
    "lr_scheduler.gamma": lambda v: v > 0,
    "lr_scheduler.step_size": lambda v: isinstance(v, int) and v >= 1,
}


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    key=st.sampled_from(sorted(RANGES)),
    value=st.one_of(
        st.integers(-5, 5), st.floats(-3, 3, allow_nan=False), st.sampled_from([math.inf, -math.inf, math.nan])
    ),
)
def test_a_value_is_refused_exactly_when_it_is_outside_its_declared_domain(key, value):
    section, name = key.split(".")
    found = violations(config(**{section: {name: value}}))
    allowed = math.isfinite(value) and RANGES[key](value)
    assert found == [] if allowed else (len(found) == 1 and found[0].startswith(f"{key}: expected "))


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(value=st.one_of(st.integers(-3, 10), st.floats(-0.5, 1.5, allow_nan=False)))
def test_batch_limits_are_counts_or_shares(value):
    allowed = value >= 0 if isinstance(value, int) else 0 <= value <= 1
    assert accepts(BatchLimit, value) == allowed
    assert TRAINER["limit_train_batches"] == TRAINER["limit_predict_batches"]


def test_the_declarations_say_their_domains_in_words():
    assert accepts(OPTIMIZER["betas"], [0.9, 0.999]) and not accepts(OPTIMIZER["betas"], [0.9, 1.0])
    assert not accepts(OPTIMIZER["betas"], [0.9])
    assert expected(OPTIMIZER["betas"]) == "[a number in [0, 1), a number in [0, 1)]"
    assert expected(SCHEDULE["anneal_strategy"]) == "one of 'cos', 'linear'"
    assert expected(TRAINER["max_epochs"]) == "null or an int >= -1 (-1: no limit)"
    assert (Fraction.check("0.5"), PositiveInt.check(3), NonNegativeFloat.check(0)) == (0.5, 3, 0.0)


@pytest.mark.parametrize(
    "flag, expected, code",
    [
        ("--trainer.accumulate_grad_batches=0", "trainer.accumulate_grad_batches: expected an int >= 1, got '0'", 2),
        ("--optimizer.init_args.lr=-0.1", "optimizer.lr: expected a number >= 0, got -0.1", 2),
        ("--optimizer.init_args.lr=nan", "optimizer.lr: expected a number >= 0, got 'nan'", 2),
        ("--trainer.precision=17", "trainer.precision: expected null or one of '32-true', ", 2),
        ("--checkpoint.mode=sideways", "checkpoint.mode: expected null or one of 'min', 'max', got 'sideways'", 2),
        ("--seed_everything=-1", "seed_everything: expected true or false or an int in [0, 4294967295], got '-1'", 2),
        ("--trainer.max_epochs=0", "trainer.max_epochs=0 leaves fit nothing to run", 1),
        ("--trainer.limit_train_batches=0", "trainer.limit_train_batches=0 leaves fit nothing to run", 1),
    ],
)
def test_the_command_line_names_the_key_before_anything_is_built(capsys, monkeypatch, flag, expected, code):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--config", "domains/demo/demo.yaml", flag])
    assert stop.value.code == code
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert errors and errors[0].startswith(f"error: {expected}")


def resolved(capsys, *argv: str) -> dict:
    with pytest.raises(SystemExit):
        main(["fit", *argv, "--print_config"])
    return yaml.safe_load(capsys.readouterr().out)


def test_a_section_that_names_another_class_keeps_nothing_of_the_old_one(capsys, tmp_path):
    other = tmp_path / "data.yaml"
    interactions = tmp_path / "interactions.txt"  # --print_config builds the data module: it must be readable
    interactions.write_text("".join(f"{user} {item}\n" for user in range(1, 21) for item in range(1, 8)))
    other.write_text(f"class_path: domains.recommender.UserItemSequences\ninit_args:\n  path: {interactions}\n")
    data = resolved(capsys, "--config", "domains/recommender/sasrec_ml100k.yaml", f"--data={other}")["data"][
        "init_args"
    ]
    # sasrec_ml100k's MovieLens section says 5 and 5; the new class's own defaults are 3 and 1
    assert (data["min_user_interactions"], data["min_item_interactions"]) == (3, 1)
    assert data["path"] == str(interactions)


def test_a_section_of_the_same_class_still_merges_key_by_key(capsys):
    data = resolved(capsys, "--config", "domains/recommender/sasrec_ml100k.yaml", "--data.batch_size=7")["data"][
        "init_args"
    ]
    assert (data["batch_size"], data["min_user_interactions"]) == (7, 5)
    optimizer = resolved(capsys, "--config", "domains/demo/demo.yaml", "--optimizer.weight_decay=0.5")["optimizer"]
    assert optimizer["init_args"]["lr"] == 0.003 and optimizer["init_args"]["weight_decay"] == 0.5
    switched = resolved(capsys, "--config", "domains/demo/demo.yaml", "--optimizer=torch.optim.SGD")["optimizer"]
    assert switched["class_path"] == "torch.optim.SGD" and switched["init_args"]["lr"] == 0.001  # SGD's default
