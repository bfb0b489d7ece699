"""W&B without an account or a network: offline into the run folder, metrics, full config and attention images."""

from __future__ import annotations

import http.server
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path

import pytest
import wandb
import yaml
from PIL import Image

from framework.__main__ import main
from framework.loggers import WandbLogger, unreachable, wandb_mode, wandb_modes
from tests.wandb_records import config, history, metric_summaries, summary, written

SMALL = [
    "--config",
    "domains/demo/demo.yaml",
    "--data.train_size=256",
    "--data.val_size=64",
    "--data.test_size=64",
    "--data.batch_size=32",
    "--trainer.max_epochs=2",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


def test_wandb_runs_offline_into_the_run_folder_with_metrics_config_and_maps(caplog):
    with caplog.at_level(logging.INFO):
        cli = main(["fit", *SMALL])
    run = Path(cli.trainer.default_root_dir)
    log = written(run)
    assert sum("logged offline" in r.getMessage() for r in caplog.records) == 1

    steps = history(log)
    val_acc = [float(s["val/acc"]) for s in steps if "val/acc" in s]
    assert len(val_acc) == 2 and all(0.0 <= a <= 1.0 for a in val_acc)
    assert any("train/loss" in s and "train/acc" in s for s in steps)

    # The full resolved config, not only flat hyper-parameters.
    cfg = config(log)
    assert json.loads(cfg["model"])["class_path"] == "domains.demo.SequenceClassifier"
    assert json.loads(cfg["task"])["init_args"]["num_classes"] == 10
    assert json.loads(cfg["trainer"])["max_epochs"] == 2
    assert json.loads(cfg["optimizer"])["init_args"]["lr"] == 0.003

    maps = list(log.parent.glob("files/media/images/attention/*.png"))
    assert {p.name.split("_")[0] for p in maps} == {"encoder.layers.0.attention", "encoder.layers.1.attention"}
    # drawn by the drawing process, each at the step of its validation (logged later, while training went on)
    assert len(maps) == 4 and all(Image.open(p).size[1] >= 400 for p in maps)
    validations = [s["trainer/global_step"] for s in steps if "val/acc" in s]
    pictures = [s["trainer/global_step"] for s in steps if "attention/encoder.layers.0.attention/_type" in s]
    assert pictures == validations
    key = "attention/encoder.layers.0.attention"
    captions = [json.loads(s[f"{key}/captions"]) for s in steps if f"{key}/captions" in s]
    assert captions == [[f"{key}, epoch {epoch} (step {step})"] for epoch, step in enumerate(validations)]


def test_wandb_mode_disabled_is_honoured(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    cli = main(["fit", *SMALL, "--trainer.max_epochs=1"])
    assert not list(Path(cli.trainer.default_root_dir).glob("wandb/offline-run-*"))


@pytest.fixture
def fresh_wandb():
    """wandb reads its environment once per process; start and end the test with a fresh session."""
    wandb.teardown()
    yield
    wandb.teardown()


def free_port() -> int:
    """A local port where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def offline_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "logged offline" in r.getMessage()]


def test_a_key_without_a_reachable_server_logs_offline_at_once(monkeypatch, caplog, fresh_wandb):
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef" * 2 + "01234567")  # 40 characters, never checked
    monkeypatch.setenv("WANDB_BASE_URL", url)
    start = time.monotonic()
    with caplog.at_level(logging.INFO):
        cli = main(["fit", *SMALL, "--trainer.max_epochs=1"])
    assert time.monotonic() - start < 20  # wandb.init alone used to wait ~108 s before failing
    (line,) = offline_lines(caplog)
    run = Path(cli.trainer.default_root_dir)
    assert f"W&B server {url} unreachable (cannot connect to 127.0.0.1:" in line
    assert f"`wandb sync {run}/wandb/offline-run-*`" in line
    assert any("val/acc" in step for step in history(written(run)))


@pytest.mark.slow
def test_a_failing_online_init_falls_back_to_offline_once(monkeypatch, caplog, fresh_wandb, tmp_path):
    class Broken(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(500)
            self.end_headers()

        do_GET = do_POST

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Broken)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("WANDB_API_KEY", "f" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", "2")
    try:
        with caplog.at_level(logging.INFO):
            logger = WandbLogger(save_dir=str(tmp_path / "run"))
            assert not offline_lines(caplog)  # the server answers, so online is tried
            logger.log_metrics({"x": 1.0})
            logger.finalize("success")
    finally:
        server.shutdown()
    (line,) = offline_lines(caplog)
    assert "wandb.init failed online (" in line and f"wandb sync {tmp_path / 'run'}/wandb/offline-run-*" in line
    assert [float(step["x"]) for step in history(written(tmp_path / "run")) if "x" in step] == [1.0]


def test_unreachable_names_the_host_and_gives_up_within_its_timeout(monkeypatch):
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert unreachable(f"http://127.0.0.1:{listening.getsockname()[1]}") is None
    port = free_port()
    assert unreachable(f"http://127.0.0.1:{port}/") == f"cannot connect to 127.0.0.1:{port}: Connection refused"

    monkeypatch.setattr(socket, "create_connection", lambda *args, **kwargs: time.sleep(5))  # a hanging name lookup
    start = time.monotonic()
    assert unreachable("https://wandb.example.org", timeout=0.3) == "wandb.example.org:443 did not answer within 0.3 s"
    assert time.monotonic() - start < 1


@pytest.mark.slow
def test_the_wandb_run_holds_the_best_score_its_epoch_and_the_monitored_metrics_best_summary():
    cli = main(["fit", *SMALL, "--trainer.max_epochs=3", "--optimizer.init_args.lr=0"])  # flat: ties keep epoch 0
    log = written(Path(cli.trainer.default_root_dir))
    found = summary(log)
    val_acc = [float(s["val/acc"]) for s in history(log) if "val/acc" in s]
    assert float(found["best/val/acc"]) == max(val_acc) == float(cli.trainer.checkpoint_callback.best_model_score)
    assert json.loads(found["best/epoch"]) == 0 and "best/val/loss" in found
    assert metric_summaries(log)["val/acc"] == ["max"]


def test_the_config_records_what_the_run_used(capsys):
    cli = main(["fit", *SMALL, "--trainer.max_epochs=1"])
    saved = yaml.safe_load((Path(cli.trainer.default_root_dir) / "config.yaml").read_text())
    assert (saved["checkpoint"]["monitor"], saved["checkpoint"]["mode"]) == ("val/acc", "max")
    assert (saved["model"]["init_args"]["vocab_size"], saved["task"]["init_args"]["num_classes"]) == (177, 10)
    sent = json.loads(config(written(Path(cli.trainer.default_root_dir)))["checkpoint"])
    assert (sent["monitor"], sent["mode"]) == ("val/acc", "max")
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["fit", *SMALL, "--print_config"])
    printed = yaml.safe_load(capsys.readouterr().out)
    assert (printed["checkpoint"]["monitor"], printed["checkpoint"]["mode"]) == ("val/acc", "max")
    assert printed["model"]["init_args"]["vocab_size"] == 177


def test_wandb_mode_online_without_a_reachable_server_is_one_line_within_seconds(monkeypatch, capsys, fresh_wandb):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_API_KEY", "f" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{free_port()}")
    start = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        main(["fit", *SMALL, "--trainer.max_epochs=1"])
    assert stop.value.code == 1 and time.monotonic() - start < 20
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert error == [error[0]] and error[0].startswith("error: WANDB_MODE=online, but W&B server http://127.0.0.1:")


@pytest.mark.parametrize("mode", ["", "bogus", "Offline"])
def test_an_empty_or_unknown_wandb_mode_is_one_line_naming_it_before_anything_is_built(monkeypatch, capsys, mode):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)
    monkeypatch.setenv("WANDB_MODE", mode)
    with pytest.raises(SystemExit) as stop:
        main(["fit", *SMALL])
    assert stop.value.code == 1
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert error == [
        f"error: WANDB_MODE={mode!r} is not a W&B mode: set it to one of {', '.join(wandb_modes())}, or unset it "
        "(runs are then logged online when they can be, else offline)"
    ]
    assert not any(Path(os.environ["FRAMEWORK_RUNS_DIR"]).iterdir()), "a run folder was made"


def test_every_mode_wandb_declares_is_taken(monkeypatch):
    assert {"online", "offline", "disabled", "dryrun"} <= set(wandb_modes())
    for mode in wandb_modes():
        monkeypatch.setenv("WANDB_MODE", mode)
        assert wandb_mode() == mode
    monkeypatch.delenv("WANDB_MODE")
    assert wandb_mode() is None
