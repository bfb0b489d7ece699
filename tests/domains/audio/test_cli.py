"""The audio configs are the issue's, a wrong block name fails at parse time, and a front end at
another sample rate than the data fails when the run starts (every config's run: tests/test_configs.py)."""

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
    assert "pooling" in err and "unknown pooling block 'mhsa'" in err


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
