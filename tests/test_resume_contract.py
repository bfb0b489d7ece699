"""The resume contract (``framework/commands/fit/resume.py``): a resumed fit takes the changes that
keep its run one run, records them in ``summary.json`` at the step it resumed at, and refuses the
others in one line, saying how to start a new run from the weights instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.__main__ import main
from framework.commands.fit.resume import NOT_COMPARED, RESUMABLE, check_resume, flat, resumable
from framework.errors import ConfigError

DEMO = [
    "--config",
    "domains/demo/demo.yaml",
    "--config",
    "configs/logger/csv.yaml",
    "--data.train_size=64",
    "--data.val_size=16",
    "--data.test_size=16",
    "--trainer.max_epochs=1",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


def replaced(config: dict, key: str, value) -> dict:
    """A copy of a config with the dotted ``key`` (as :func:`flat` names it) set to ``value``."""
    copy = json.loads(json.dumps(config))
    *parents, leaf = key.split(".")
    node = copy
    for part in parents:
        node = node[part] if part in node else node["init_args"][part]
    (node if leaf in node else node["init_args"])[leaf] = value
    return copy


@settings(max_examples=80, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_a_change_is_taken_exactly_when_its_key_is_declared_resumable(data):
    config = {
        "trainer": {"max_epochs": 3, "devices": 1, "logger": {"class_path": "x"}, "precision": "32-true"},
        "optimizer": {"class_path": "torch.optim.AdamW", "init_args": {"lr": 0.003, "weight_decay": 0.01}},
        "data": {"class_path": "d.D", "init_args": {"batch_size": 64, "num_workers": 0, "seed": 0}},
        "model": {"class_path": "m.M", "init_args": {"dim": 64}},
        "attention_maps": {"every_n_epochs": 1},
        "seed_everything": 0,
        "weights_from": None,
    }
    key = data.draw(st.sampled_from(sorted(flat(config))), label="key")
    changed = replaced(config, key, "something else")
    if resumable(key) or key in NOT_COMPARED:
        taken = check_resume(config, changed, "last.ckpt")
        assert [change.key for change in taken] == ([] if key in NOT_COMPARED else [key])
    else:
        with pytest.raises(ConfigError, match=rf"{key}: the run has .*, given 'something else'.*--weights_from"):
            check_resume(config, changed, "last.ckpt")


def test_the_resumable_keys_are_few_and_explained():
    assert all(reason for reason in RESUMABLE.values()) and len(RESUMABLE) < 30
    assert not resumable("optimizer.lr") and not resumable("data.batch_size") and not resumable("seed_everything")
    assert resumable("trainer.max_epochs") and resumable("attention_maps.every_n_epochs")


@pytest.mark.slow
def test_a_resumed_fit_takes_more_epochs_refuses_a_new_learning_rate_and_a_new_run_takes_the_weights(
    capsys, monkeypatch, tmp_path
):
    first = main(["fit", *DEMO, "--run_dir", str(tmp_path / "run")])
    last = Path(first.trainer.checkpoint_callback.last_model_path)
    step = first.trainer.global_step

    monkeypatch.delenv("FRAMEWORK_TRACEBACK")
    for flag, shown in (
        ("--optimizer.lr=0.01", "optimizer.lr: the run has 0.003, given 0.01"),
        ("--data.batch_size=16", "data.batch_size: the run has 64, given 16"),
    ):
        with pytest.raises(SystemExit) as stop:
            main(["fit", *DEMO, flag, "--ckpt_path", str(last)])
        lines = capsys.readouterr().err.strip().splitlines()
        err = lines[lines.index(next(line for line in lines if line.startswith("error: "))) :]
        assert stop.value.code == 1 and len(err) <= 2, lines
        assert shown in err[0] and f"--weights_from {last}" in err[0], err[0]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["fit"]["status"] == "finished" and summary["fit"]["changes"] == [], (
        "a refused resume changed nothing"
    )

    main(["fit", *DEMO, "--trainer.max_epochs=2", "--ckpt_path", str(last)])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())["fit"]
    assert summary["changes"] == [{"step": step, "key": "trainer.max_epochs", "from": 1, "to": 2}]
    assert summary["epochs"] == 2
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["trainer"]["max_epochs"] == 2

    # a new run from the weights: its own folder and epochs; with a learning rate of 0 its weights stay the source's
    fresh = main(
        [
            "fit",
            *DEMO,
            "--optimizer.lr=0",
            "--optimizer.weight_decay=0",
            "--weights_from",
            str(last),
            "--run_dir",
            str(tmp_path / "fresh"),
        ]
    )
    source = torch.load(last, map_location="cpu", weights_only=True)["state_dict"]
    for name, value in fresh.model.state_dict().items():
        if name.startswith("model."):
            torch.testing.assert_close(value.cpu(), source[name])
    assert json.loads((tmp_path / "fresh" / "summary.json").read_text())["fit"]["epochs"] == 1
