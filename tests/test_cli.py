"""The command line: fit -> test round trip, composition, overrides, errors, resume."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import yaml

from framework import TaskModule
from framework.__main__ import main
from tests.conftest import accelerator, demo_config, on

SMALL = [
    "--config",
    "domains/demo/demo.yaml",
    "--config",
    "configs/logger/csv.yaml",
    "--data.train_size=256",
    "--data.val_size=64",
    "--data.test_size=64",
    "--data.batch_size=32",
    "--trainer.max_epochs=1",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


def fit(*extra: str):
    return main(["fit", *SMALL, *extra])


def test_fit_then_test_from_the_checkpoint(capsys, device):
    cli = fit("--trainer.max_epochs=2", f"--trainer.accelerator={accelerator(device)}")
    run = Path(cli.trainer.default_root_dir)
    best, last = run / "checkpoints" / "best.ckpt", run / "checkpoints" / "last.ckpt"
    assert best.is_file() and last.is_file() and (run / "config.yaml").is_file() and (run / "metrics.csv").is_file()
    assert run.parent.name == "demo" and run.name.endswith("_fit")

    summary = capsys.readouterr().out
    assert f"Run summary: {run}" in summary and "val/acc" in summary and str(best) in summary

    fit_metrics = (run / "metrics.csv").read_text()
    tested = main(
        [
            "test",
            "--config",
            str(run / "config.yaml"),
            "--ckpt_path",
            str(best),
            "--trainer.enable_progress_bar=false",
            f"--trainer.accelerator={accelerator(device)}",
        ]
    )
    metrics = tested.trainer.callback_metrics
    assert {"test/acc", "test/f1", "test/loss"} <= set(metrics)
    # The saved config names no folder of the fit run: the test run has its own, fit's files stay.
    test_run = Path(tested.trainer.default_root_dir)
    assert test_run != run and test_run.parent == run.parent and test_run.name.endswith("_test")
    assert (run / "metrics.csv").read_text() == fit_metrics and (test_run / "metrics.csv").is_file()

    # The checkpoint alone rebuilds the module, and it predicts what the CLI's module predicts.
    loaded = TaskModule.load_from_checkpoint(best, map_location=device).eval()
    batch = on(device, next(iter(tested.datamodule.test_dataloader())))
    module = on(device, tested.model).eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded.task.predict(loaded.model, batch), module.task.predict(module.model, batch))


def test_checkpoint_carries_model_and_task_so_test_needs_only_data():
    run = Path(fit("--model.attention=local").trainer.default_root_dir)
    # The config file names another block (mhsa); the checkpoint's own model config wins, so its weights load.
    cli = main(["validate", *SMALL, "--ckpt_path", str(run / "checkpoints" / "last.ckpt")])
    assert type(cli.model.model.encoder.layers[0].attention).__name__ == "LocalAttention"
    assert "val/acc" in cli.trainer.callback_metrics


@pytest.mark.slow
def test_task_flags_on_the_command_line_win_over_the_checkpoints_task():
    run = Path(fit().trainer.default_root_dir)
    ckpt = str(run / "checkpoints" / "last.ckpt")
    assert main(["validate", *SMALL, "--ckpt_path", ckpt]).model.task.label_smoothing == 0.0
    cli = main(["validate", *SMALL, "--ckpt_path", ckpt, "--task.label_smoothing", "0.2"])
    assert cli.model.task.label_smoothing == 0.2 and cli.model.task.num_classes == 10


def test_an_optimizer_named_in_a_config_gets_its_own_defaults(tmp_path):
    config = demo_config()
    del config["optimizer"]
    (tmp_path / "no_optimizer.yaml").write_text(yaml.safe_dump(config))
    sgd = tmp_path / "sgd.yaml"
    sgd.write_text(yaml.safe_dump({"optimizer": {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.1}}}))
    args = ["--config", str(tmp_path / "no_optimizer.yaml"), *SMALL[2:], "--trainer.max_steps=1"]
    default = main(["fit", *args]).trainer.optimizers[0]
    assert type(default) is torch.optim.AdamW and default.defaults["lr"] == 1e-3
    named = main(["fit", *args, "--config", str(sgd)]).trainer.optimizers[0]
    assert type(named) is torch.optim.SGD and named.defaults["weight_decay"] == 0  # SGD's own default


def test_a_schedule_without_an_optimizer_is_refused(tmp_path, capsys):
    config = demo_config()
    del config["optimizer"]
    config["lr_scheduler"] = {"class_path": "torch.optim.lr_scheduler.StepLR", "init_args": {"step_size": 1}}
    (tmp_path / "schedule_only.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(tmp_path / "schedule_only.yaml"), *SMALL[2:]])
    assert "lr_scheduler is set but optimizer is not" in capsys.readouterr().err


def test_predict_returns_logits(device):
    run = Path(fit(f"--trainer.accelerator={accelerator(device)}").trainer.default_root_dir)
    cli = main(
        [
            "predict",
            *SMALL,
            "--ckpt_path",
            str(run / "checkpoints" / "best.ckpt"),
            f"--trainer.accelerator={accelerator(device)}",
        ]
    )
    assert cli.trainer.predict_loop.predictions[0].shape == (32, 10)


def test_block_swap_by_name_by_none_and_by_class_path():
    assert type(fit("--model.attention=none").model.model.encoder.layers[0].attention).__name__ == "NoAttention"
    spec = '{"class_path": "framework.attention.sequence.LocalAttention", "init_args": {"window": 1, "num_heads": 2}}'
    block = fit(f"--model.attention={spec}").model.model.encoder.layers[0].attention
    assert type(block).__name__ == "LocalAttention" and block.window == 1 and block.num_heads == 2


def test_unknown_block_name_fails_at_parse_time_with_the_key_and_close_names(capsys):
    with pytest.raises(SystemExit):
        fit("--model.attention=mhsaa")
    err = capsys.readouterr().err
    assert "attention" in err and "unknown sequence block 'mhsaa'; did you mean: mhsa" in err


def test_print_config_shows_the_composed_config(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["fit", *SMALL, "--config", "configs/trainer/debug.yaml", "--model.attention=local", "--print_config"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "class_path: domains.demo.SequenceClassifier" in out and "attention: local" in out
    assert "class_path: domains.demo.SequenceClassification" in out
    assert "limit_train_batches: 5" in out and "class_path: framework.loggers.CSVLogger" in out


@pytest.mark.parametrize("command", ["evaluate", "parity"])
def test_print_config_of_the_commands_without_a_subcommand_fills_the_sizes(command, capsys):
    """evaluate's and parity's parsers have no subcommand: --print_config prints their config too."""
    with pytest.raises(SystemExit) as stop:
        main([command, *SMALL, "--print_config"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "class_path: domains.demo.SequenceClassifier" in out and "vocab_size: " in out


def test_runs_never_share_a_folder_and_are_kept_by_domain_and_config():
    first, second = (Path(fit().trainer.default_root_dir) for _ in range(2))
    assert first != second and first.parent == second.parent
    assert first.parent == Path(os.environ["FRAMEWORK_RUNS_DIR"]) / "demo" / "demo"  # domains/demo/demo.yaml


def test_resumed_fit_continues_in_its_folder_where_it_stopped(device):
    on_device = f"--trainer.accelerator={accelerator(device)}"
    run = Path(fit(on_device).trainer.default_root_dir)
    last = run / "checkpoints" / "last.ckpt"
    steps = torch.load(last, weights_only=False)["global_step"]
    resumed = fit("--trainer.max_epochs=2", "--ckpt_path", str(last), on_device)
    assert Path(resumed.trainer.default_root_dir) == run
    assert resumed.trainer.current_epoch == 2
    assert torch.load(last, weights_only=False)["global_step"] == 2 * steps
    assert len((run / "metrics.csv").read_text().strip().splitlines()) > 2


def test_blocks_subcommand_prints_the_catalogue(capsys):
    main(["blocks"])
    out = capsys.readouterr().out
    assert "criss_cross" in out and "feature map" in out and "Huang et al." in out


def test_the_best_checkpoint_follows_the_tasks_metric_unless_configured():
    checkpoint = fit().trainer.checkpoint_callback
    assert (checkpoint.monitor, checkpoint.mode) == ("val/acc", "max")
    checkpoint = fit("--checkpoint.monitor=val/loss").trainer.checkpoint_callback
    assert (checkpoint.monitor, checkpoint.mode) == ("val/loss", "min")


def test_an_integer_batch_limit_counts_batches_and_a_float_is_a_share(tmp_path):
    # Lightning types the limits Union[float, int]; parsed in that order "1" was 1.0, the whole epoch.
    config = tmp_path / "limits.yaml"
    config.write_text("trainer:\n  limit_val_batches: 1\n")
    cli = fit("--trainer.limit_train_batches=1", "--config", str(config), "--trainer.num_sanity_val_steps=0")
    assert cli.trainer.global_step == 1 and cli.trainer.num_val_batches == [1]
    cli = fit("--trainer.limit_train_batches=0.25", "--trainer.limit_val_batches=1.0")
    assert cli.trainer.global_step == 2 and cli.trainer.num_val_batches == [2]  # a quarter of 8 batches; all 2


def test_the_help_names_every_command_and_imports_no_lightning_wandb_or_matplotlib():
    import subprocess
    import sys

    from framework.__main__ import COMMANDS

    probe = (
        "import sys; from framework.__main__ import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit as stop:\n    assert stop.code == 0\n"
        "print(sorted(m for m in ('lightning', 'wandb', 'matplotlib', 'jsonargparse') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]", "the help imported what it does not need"
    assert done.stdout.startswith("usage: python -m framework <command>")
    listed = [line.split()[0] for line in done.stdout.split("commands:\n")[1].split("\n\n")[0].splitlines()]
    assert listed == list(COMMANDS) == ["fit", "validate", "test", "predict", "evaluate", "compare", "parity", "blocks"]


def test_an_unknown_command_is_one_line_with_the_close_name(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["fitt"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[0] == "error: unknown command 'fitt'; did you mean fit?"


NOISE = (
    "litlogger",
    "anonymous setting",
    "LeafSpec",
    "dirpath has changed",
    "weights_only` was not set",
    "wandb: Tracking run",
    "wandb: You can sync",
    "wandb: Find logs",
)


@pytest.mark.slow
def test_a_run_ends_with_its_summary_and_repeats_no_harmless_warnings(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    common = [
        "--data.train_size=64",
        "--data.val_size=32",
        "--data.test_size=32",
        "--trainer.max_epochs=1",
        "--trainer.enable_progress_bar=false",
    ]  # the configs' default logger: W&B, offline here

    def run(*argv):
        done = subprocess.run(
            [sys.executable, "-m", "framework", *argv], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    fitted = run("fit", "--config", "domains/demo/demo.yaml", *common, f"--run_dir={tmp_path / 'fit'}")
    out = [line for line in (fitted.stdout + fitted.stderr).splitlines() if line.strip()]
    assert fitted.stdout.strip().splitlines()[-1].startswith("  last checkpoint: ")
    best = tmp_path / "fit" / "checkpoints" / "best.ckpt"
    predicted = run("predict", "--config", str(tmp_path / "fit" / "config.yaml"), "--ckpt_path", str(best), *common)
    assert (predicted.stdout + predicted.stderr).strip().splitlines()[-1].startswith("Predictions of 32 examples: ")
    out += (predicted.stdout + predicted.stderr).splitlines()
    assert not [line for line in out if any(noise in line for noise in NOISE)]
    assert sum("logged offline" in line for line in out) == 2  # said once per run, with where it is


@pytest.mark.slow
def test_the_summary_records_where_the_numbers_come_from():
    import json

    first, again = fit(), fit()
    other = fit("--model.dropout=0.3")
    record = [
        json.loads((Path(cli.trainer.default_root_dir) / "summary.json").read_text())["fit"]["provenance"]
        for cli in (first, again, other)
    ]
    assert record[0]["config_hash"] == record[1]["config_hash"] != record[2]["config_hash"]
    assert len(record[0]["config_hash"]) == 16 and record[0]["seed"] == 0
    assert record[0]["data"] == {"class": "domains.demo.AssociativeRecall", "sources": [], "content_key": None}
    assert record[0]["versions"]["torch"] == torch.__version__ and record[0]["code"]["commit"]
    assert set(record[0]["blocks"]) == {"encoder.layers.0.attention", "encoder.layers.1.attention"}
    assert record[0]["device"].startswith("cpu")


def test_the_data_record_keys_the_files_a_reader_names(tmp_path):
    from types import SimpleNamespace

    from framework.data import content_key
    from framework.provenance import data_record

    (tmp_path / "train.txt").write_text("a b\n")
    (tmp_path / "test.txt").write_text("c d\n")
    data = SimpleNamespace(sources={"train": str(tmp_path / "train.txt"), "test": f"{tmp_path} (the test list)"})
    record = data_record(data, {"class_path": "my.Data"})
    assert record["class"] == "my.Data" and record["sources"] == sorted([str(tmp_path), str(tmp_path / "train.txt")])
    assert record["content_key"] == content_key([tmp_path / "train.txt", tmp_path / "test.txt"])
    (tmp_path / "test.txt").write_text("c e\n")
    assert data_record(data, {"class_path": "my.Data"})["content_key"] != record["content_key"]
