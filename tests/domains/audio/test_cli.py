"""The audio configs are the issue's, a wrong block name or a value outside its key's domain fails at
parse time, and a front end at another sample rate than the data fails when the run starts (every
config's run: tests/test_configs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.__main__ import main

QUICK = [
    "--config",
    "configs/logger/csv.yaml",
    "--trainer.fast_dev_run=true",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--data.batch_size=4",
]
SMALL_EVENTS = ["--data.train_size=8", "--data.val_size=4", "--data.test_size=4"]


def test_the_domain_has_the_issues_configs():
    names = {path.stem for path in Path(__file__).parents[3].joinpath("domains/audio").glob("*.yaml")}
    base = {"cnn", "cnn_cbam", "transformer", "crnn_attention"}
    assert names == base | {f"{name}_fsdd" for name in base} | {"las_digits"}


def test_a_block_of_the_wrong_kind_fails_while_parsing_with_the_key(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--config", "domains/audio/transformer.yaml", *QUICK, "--model.pooling=mhsa"])
    err = capsys.readouterr().err
    assert "pooling" in err and "attention block 'mhsa' is a sequence block; this slot takes pooling blocks: " in err


@pytest.mark.parametrize(
    "config, key, value, domain",
    [
        ("cnn.yaml", "data.duration", "0", "a number >= 0.3 (seconds, to hold an event)"),
        ("cnn_fsdd.yaml", "data.split", "random", "'official', 'speakers'"),
        ("cnn_fsdd.yaml", "data.val_fraction", "1.5", "a number in (0, 1)"),
        ("transformer.yaml", "model.frontend.features", "stft", "'mel', 'mfcc'"),
        ("transformer.yaml", "model.frontend.normalize", "utterance", "'clip', 'bins'"),
        ("transformer.yaml", "model.stem_layers", "-1", "an int >= 0"),
        ("las_digits.yaml", "data.source", "tones", "'fsdd', 'events'"),
        ("las_digits.yaml", "task.decoding", "sample", "'greedy', 'beam'"),
    ],
)
def test_a_value_outside_its_keys_domain_fails_while_parsing_with_the_key(
    capsys, monkeypatch, config, key, value, domain
):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)  # the one-line error a user sees
    flag = f"--{key}={value}".replace("frontend.", "frontend.init_args.")
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--config", f"domains/audio/{config}", *QUICK, flag])
    assert stop.value.code == 2
    line = capsys.readouterr().err.splitlines()[0]
    assert line.startswith(f"error: {key}: ") and domain in line and value in line, line


def test_a_front_end_at_another_sample_rate_than_the_data_fails_when_the_run_starts():
    with pytest.raises(
        ValueError, match="model.frontend.init_args.sample_rate is 16000 Hz but data.sample_rate is 8000"
    ):
        main(
            [
                "fit",
                "--config",
                "domains/audio/cnn.yaml",
                *QUICK,
                *SMALL_EVENTS,
                "--model.frontend.init_args.sample_rate=16000",
            ]
        )
