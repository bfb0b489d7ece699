"""Trainer, optimizer and schedule values are checked when the config is parsed, naming the key;
a section that names another class starts from that class's defaults."""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonargparse import Namespace

from framework.__main__ import main
from framework.commands.fit.config_values import violations


def config(trainer: dict = None, optimizer: dict = None, lr_scheduler: dict = None) -> Namespace:
    section = lambda args: None if args is None else Namespace(class_path="x.Y", init_args=Namespace(**args))
    return Namespace(
        trainer=Namespace(**(trainer or {})), optimizer=section(optimizer), lr_scheduler=section(lr_scheduler)
    )


#: key -> (where it goes, whether a value is allowed), written out independently of the rules' table.
RANGES = {
    "trainer.accumulate_grad_batches": lambda v: v >= 1,
    "trainer.max_epochs": lambda v: v >= -1,
    "trainer.check_val_every_n_epoch": lambda v: v >= 1,
    "trainer.gradient_clip_val": lambda v: v >= 0,
    "optimizer.lr": lambda v: v >= 0,
    "optimizer.weight_decay": lambda v: v >= 0,
    "optimizer.eps": lambda v: v > 0,
    "lr_scheduler.gamma": lambda v: v > 0,
    "lr_scheduler.step_size": lambda v: v >= 1,
}


def placed(key: str, value) -> Namespace:
    section, name = key.split(".")
    return config(**{section: {name: value}})


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(sorted(RANGES)),
    value=st.one_of(
        st.integers(-5, 5), st.floats(-3, 3, allow_nan=False), st.sampled_from([math.inf, -math.inf, math.nan])
    ),
)
def test_a_value_is_refused_exactly_when_it_is_out_of_range_and_the_message_names_the_key(key, value):
    found = violations(placed(key, value))
    allowed = math.isfinite(value) and RANGES[key](value)
    assert (
        found == []
        if allowed
        else (len(found) == 1 and found[0].startswith(f"{key} must be ") and repr(value) in found[0])
    )


@settings(max_examples=40, deadline=None)
@given(
    stage=st.sampled_from(["train", "val", "test", "predict"]),
    value=st.one_of(st.integers(-3, 10), st.floats(-0.5, 1.5, allow_nan=False)),
)
def test_batch_limits_are_counts_or_shares(stage, value):
    key = f"trainer.limit_{stage}_batches"
    allowed = value >= 0 if isinstance(value, int) else 0 <= value <= 1
    assert (violations(placed(key, value)) == []) == allowed


def test_betas_are_two_probabilities():
    assert violations(config(optimizer={"betas": [0.9, 0.999]})) == []
    assert violations(config(optimizer={"betas": [0.9, 1.0]}))[0].startswith(
        "optimizer.betas must be two numbers in [0, 1)"
    )
    assert violations(config(optimizer={"betas": [0.9]}))


@pytest.mark.parametrize(
    "flag, expected",
    [
        ("--trainer.accumulate_grad_batches=0", "trainer.accumulate_grad_batches must be a number >= 1, got 0"),
        ("--optimizer.init_args.lr=-0.1", "optimizer.lr must be a number >= 0, got -0.1"),
        ("--trainer.max_epochs=0", "trainer.max_epochs=0 leaves fit nothing to run"),
        ("--trainer.limit_train_batches=0", "trainer.limit_train_batches=0 leaves fit nothing to run"),
    ],
)
def test_the_command_line_names_the_key_before_anything_is_built(capsys, monkeypatch, flag, expected):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--config", "domains/demo/demo.yaml", flag])
    assert stop.value.code == 1
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
