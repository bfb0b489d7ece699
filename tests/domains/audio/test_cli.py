"""Every audio config runs through the CLI (fast_dev_run), and a wrong block name fails at parse time."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.__main__ import main
from tests.conftest import ONE_BATCH, accelerator
from tests.image_logger import logged_pictures

CONFIGS = sorted(Path("domains/audio").glob("*.yaml")) if Path("domains/audio").is_dir() else []
QUICK = ["--config", "configs/logger/csv.yaml", "--trainer.fast_dev_run=true", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false", "--data.batch_size=4"]
PICTURES = "--trainer.logger=tests.image_logger.ImageLogger"
SMALL_EVENTS = ["--data.train_size=8", "--data.val_size=4", "--data.test_size=4"]
#: Sequence recognition configs: their embedded variant (generated events for digits), cut down.
RECOGNITION = {"las_digits": ["--data.source=events", *SMALL_EVENTS, "--data.events_per_digit=2"]}


def test_the_domain_has_the_issues_configs():
    names = {path.stem for path in Path(__file__).parents[3].joinpath("domains/audio").glob("*.yaml")}
    base = {"cnn", "cnn_cbam", "transformer", "crnn_attention"}
    assert names == base | {f"{name}_fsdd" for name in base} | set(RECOGNITION)


@pytest.mark.parametrize("config", [p.stem for p in CONFIGS])
def test_config_runs_with_fast_dev_run(config, shared_data, device):
    if config.endswith("_fsdd"):
        shared_data("fsdd")
    extra = [] if config.endswith("_fsdd") else RECOGNITION.get(config, SMALL_EVENTS)
    cli = main(["fit", "--config", f"domains/audio/{config}.yaml", *QUICK, *extra,
                *ONE_BATCH, f"--trainer.accelerator={accelerator(device)}"])
    if config in RECOGNITION:
        assert {"train/loss", "val/wer", "val/cer", "val/token_acc"} <= set(cli.trainer.callback_metrics)
        assert "images/alignment" in logged_pictures(cli.trainer)
        return
    assert {"train/loss", "val/acc", "val/f1"} <= set(cli.trainer.callback_metrics)
    assert "images/time_attention" in logged_pictures(cli.trainer)


def test_a_block_of_the_wrong_kind_fails_while_parsing_with_the_key(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--config", "domains/audio/transformer.yaml", *QUICK, "--model.pooling=mhsa"])
    err = capsys.readouterr().err
    assert "pooling" in err and "unknown pooling block 'mhsa'" in err


def test_a_front_end_at_another_sample_rate_than_the_data_fails_when_the_run_starts():
    with pytest.raises(ValueError, match="model.frontend.init_args.sample_rate is 16000 Hz but data.sample_rate is 8000"):
        main(["fit", "--config", "domains/audio/cnn.yaml", *QUICK, *SMALL_EVENTS,
              "--model.frontend.init_args.sample_rate=16000"])
