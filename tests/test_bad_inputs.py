"""Bad input gets one clear message, and nothing is lost.

Every case runs the command line as a user would (``framework.__main__.main``, without
``FRAMEWORK_TRACEBACK``) and checks the exit status, that the message is one or two lines
(no traceback) naming the config key or the file, and that nothing was lost: no empty run
folder is left behind, and earlier checkpoints and data are untouched.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from framework.__main__ import main
from tests.conftest import demo_config, small_demo

DEMO = small_demo()
ONE_STEP = [
    "--trainer.max_steps=1",
    "--trainer.limit_val_batches=1",
    "--trainer.num_sanity_val_steps=0",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--config",
    "configs/logger/csv.yaml",
]


@pytest.fixture(autouse=True)
def as_a_user(monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)


def runs_root() -> Path:
    return Path(os.environ["FRAMEWORK_RUNS_DIR"])


def fails(capsys, argv: list[str], code: int = 1) -> str:
    """Run the command line, expect it to stop with ``code`` and return its message (one or two lines)."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == code
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err, err
    lines = err.splitlines()
    message = lines[lines.index(next(line for line in lines if line.startswith("error: "))) :]
    assert 1 <= len(message) <= 2, err
    return "\n".join(message)


def nothing_left() -> None:
    assert not [p for p in runs_root().rglob("*") if p.is_file()], "a failed run left files behind"


def fitted(*extra: str) -> Path:
    """The best checkpoint of a short demo fit."""
    cli = main(["fit", *DEMO, *extra])
    return Path(cli.trainer.checkpoint_callback.best_model_path)


# --- the config: parse-time errors name the key (exit status 2) ---------------------------------


@pytest.mark.parametrize(
    "flag, expected",
    [
        ("--model.attention=mhsaa", "model.attention: unknown sequence block 'mhsaa'; did you mean: mhsa?"),
        ("--model.attention=sparsemaxx", "model.attention: unknown sequence block 'sparsemaxx'"),
        ("--trainer.max_epochs=abc", "trainer.max_epochs: expected null or an int >= -1 (-1: no limit), got 'abc'"),
        ("--model.dim=x", "model.dim: expected an int >= 1, got 'x'"),
        ("--data.batch_size=0", "data.batch_size: expected an int >= 1, got '0'"),
        ("--model.depth=-1", "model.depth: expected an int >= 0, got '-1'"),
        ("--task.num_classes=1", "task.num_classes: expected null or an int >= 2 (classes), got '1'"),
        ("--model.dim=0", "model.dim: expected an int >= 1, got '0'"),
        ("--resume.every_n_steps=0", "resume.every_n_steps: expected null or an int >= 1, got '0'"),
        ("--nonsense=1", "--nonsense=1"),
        ("--compile=fastest", "compile"),
        ("--data.num_keys=many", "data.num_keys"),
        ("--trainer.precision=17", "trainer.precision"),
        ("--data.predict_splitt=test", "data: Option 'predict_splitt' is not accepted; got predict_splitt=test"),
        (
            "--model.attention.init_args.num_heads=5",
            "model.attention: num_heads=5 sets an argument of a block given by its name",
        ),
        (
            "--model.attention=my_pkg.Missing",
            "model.attention: attention block 'my_pkg.Missing': cannot import it (No module",
        ),
        (
            '--model.attention={"class_path": "my_pkg.Missing", "init_args": {"k": 3}}',
            "model.attention: attention block 'my_pkg.Missing': cannot import it (No module named 'my_pkg')",
        ),
    ],
)
def test_a_bad_value_names_its_key_in_one_line(capsys, flag, expected):
    assert expected in fails(capsys, ["fit", *DEMO, flag], code=2)
    nothing_left()


@pytest.mark.parametrize(
    "config, flag, expected",
    [
        (
            "domains/vision/ccnet.yaml",
            "--model.attention=criss_crosss",
            "unknown feature_map block 'criss_crosss'; did you mean: criss_cross?",
        ),
        (
            "domains/audio/transformer.yaml",
            "--model.pooling=mhsa",
            "model.pooling: attention block 'mhsa' is a sequence block; this slot takes pooling blocks",
        ),
        (
            "domains/memory/memn2n.yaml",
            "--model.attention=mhsa",
            "model.attention: attention block 'mhsa' is a sequence block; this slot takes memory blocks: ",
        ),
        ("domains/graph/gat.yaml", "--model.attention=gatt", "unknown graph block 'gatt'; did you mean: gat"),
        (
            "domains/nlp/seq2seq_luong.yaml",
            "--model.attention=genral",
            "unknown cross block 'genral'; did you mean: general",
        ),
    ],
)
def test_a_misspelt_block_names_the_slot_and_the_close_names(capsys, config, flag, expected):
    assert expected in fails(capsys, ["fit", "--config", config, flag], code=2)


def test_a_yaml_syntax_error_names_the_file_line_and_column(capsys, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("model:\n  class_path: x\n   bad: [\n")
    message = fails(capsys, ["fit", "--config", str(broken)])
    assert f"--config {broken} is not valid YAML at line 3, column 7" in message


def test_an_empty_init_args_names_the_file_and_key(capsys, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("model:\n  class_path: domains.demo.SequenceClassifier\n  init_args:\n")
    message = fails(capsys, ["fit", "--config", "domains/demo/demo.yaml", "--config", str(empty)])
    assert message.splitlines()[0] == (
        f"error: --config {empty}: model.init_args is empty; give it arguments or "
        "remove the line (the class's defaults apply)"
    )


@pytest.mark.parametrize(
    "content, expected",
    [
        (None, "no such file"),
        ("- a\n- b\n", "must hold a mapping of config keys, got list"),
        (b"\x89PNG\r\n\x1a\n\x00\xff", "is not a text file"),
    ],
)
def test_a_config_file_that_is_missing_or_not_a_mapping_is_named(capsys, tmp_path, content, expected):
    path = tmp_path / "config.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert f"--config {path}" in (message := fails(capsys, ["fit", "--config", str(path)])) and expected in message


def test_a_schedule_without_an_optimizer(capsys, tmp_path):
    config = demo_config()
    del config["optimizer"]
    config["lr_scheduler"] = {"class_path": "torch.optim.lr_scheduler.StepLR", "init_args": {"step_size": 1}}
    (tmp_path / "schedule.yaml").write_text(yaml.safe_dump(config))
    message = fails(capsys, ["fit", "--config", str(tmp_path / "schedule.yaml")], code=2)
    assert "lr_scheduler is set but optimizer is not" in message


# --- values that parse but cannot work: named when the run is built or starts (exit status 1) ------


@pytest.mark.parametrize(
    "flag, expected",
    [
        ("--model.vocab_size=50", "model.vocab_size is 50 but the data has 177: set model.vocab_size=177 or more"),
        ("--model.num_classes=5", "model.num_classes is 5 but the data has 10: set model.num_classes=10"),
        ("--task.num_classes=12", "task.num_classes is 12 but the data has 10"),
        ("--data.max_pairs=40", "data: need 1 <= min_pairs <= max_pairs <= num_keys"),
        ("--model.attention=torch.nn.Linear", "attention block 'torch.nn.Linear'"),
        ("--ckpt_path=best", "--ckpt_path best: give a checkpoint file"),
        (
            "--trainer.val_check_interval=5",
            "trainer.val_check_interval=5 is more than the 2 training batches of an epoch",
        ),
        pytest.param(
            "--trainer.accelerator=gpu",
            "trainer.accelerator=gpu, but torch finds no CUDA GPU on this machine",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU"),
        ),
    ],
)
def test_a_value_that_cannot_work_names_its_key_and_leaves_no_run_folder(capsys, flag, expected):
    assert expected in fails(capsys, ["fit", *DEMO, flag])
    nothing_left()


@pytest.mark.parametrize(
    "config, flags, expected",
    [
        (
            "domains/graph/gat.yaml",
            ["--model.attention=torch.nn.MultiheadAttention"],
            "does not take this model's arguments (34, 8, heads=8, concat=True, dropout=0.6) "
            "(MultiheadAttention.__init__() got an unexpected keyword argument 'heads'): the model needs a graph block",
        ),
        (
            "domains/graph/gat.yaml",
            ["--model.in_channels=10"],
            "model.in_channels is 10 but the graph's nodes have 34 features",
        ),
        (
            "domains/audio/cnn.yaml",
            ["--model.frontend.init_args.sample_rate=16000", "--data.train_size=8"],
            "model.frontend.init_args.sample_rate is 16000 Hz but data.sample_rate is 8000 Hz",
        ),
        (
            "domains/recommender/sasrec.yaml",
            ["--model.num_items=7", "--data.num_users=50"],
            "model.num_items is 7 but the data has",
        ),
        ("domains/memory/memn2n.yaml", ["--task.tasks=[3]", "--data.train_size=64"], "task.tasks"),
        ("domains/vision/ccnet.yaml", ["--model.backbone=resnet999"], "model.backbone must be a timm ResNet name"),
        (
            "domains/nlp/seq2seq_bahdanau.yaml",
            ["--model.vocab_size=20", "--data.train_size=64"],
            "model.vocab_size is 20 but the data has 64",
        ),
    ],
)
def test_domain_sizes_and_slots_are_named_before_the_first_step(capsys, config, flags, expected):
    assert expected in fails(capsys, ["fit", "--config", config, *ONE_STEP, *flags])
    nothing_left()


def test_lightnings_own_config_errors_are_one_line_too(capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU, so asking for one is no error")
    assert "gpu" in fails(capsys, ["fit", *DEMO, "--trainer.accelerator=gpu"]).lower()


def test_the_self_attentive_classifier_without_attention_trains_and_skips_its_penalty(capsys):
    cli = main(
        [
            "fit",
            "--config",
            "domains/nlp/selfattentive.yaml",
            *ONE_STEP,
            "--model.attention=none",
            "--data.train_size=64",
            "--data.val_size=16",
            "--data.test_size=16",
        ]
    )
    assert cli.trainer.state.finished and "train/penalty" not in cli.trainer.callback_metrics


def test_a_penalty_on_a_model_without_attention_rows_is_refused_at_start(capsys):
    message = fails(
        capsys,
        [
            "fit",
            "--config",
            "domains/nlp/transformer_cls.yaml",
            *ONE_STEP,
            "--task.penalty=0.1",
            "--data.train_size=64",
            "--data.val_size=16",
            "--data.test_size=16",
        ],
    )
    assert "task.penalty=0.1 needs a model that returns attention rows" in message and "set task.penalty=0" in message


# --- checkpoints (damaged and foreign files: tests/test_checkpoint_faults.py) ---------------------


@pytest.mark.parametrize("subcommand", ["test", "validate", "predict"])
def test_evaluating_without_a_checkpoint_is_refused_unless_asked_for(capsys, subcommand):
    message = fails(capsys, [subcommand, *DEMO])
    assert f"{subcommand} needs --ckpt_path" in message and "--untrained=true" in message
    nothing_left()
    assert main([subcommand, *DEMO, "--untrained=true"]).trainer.state.finished


def test_a_missing_checkpoint_is_named(capsys, tmp_path):
    assert f"--ckpt_path {tmp_path / 'best.ckpt'}: no such file" in fails(
        capsys, ["test", *DEMO, "--ckpt_path", str(tmp_path / "best.ckpt")]
    )


def test_model_flags_a_checkpoint_would_override_are_refused(capsys):
    best = fitted()
    message = fails(capsys, ["test", *DEMO, "--ckpt_path", str(best), "--model.attention=none"])
    assert "--model.attention=none: the model is rebuilt from the checkpoint" in message
    assert main(["test", *DEMO, "--ckpt_path", str(best), "--model.attention=mhsa"]).trainer.state.finished  # the same


@pytest.mark.slow
def test_a_test_of_a_checkpoint_runs_beside_its_fit_and_keeps_the_fits_files():
    best = fitted()
    fit_run = best.parent.parent
    before = {p: p.read_bytes() for p in fit_run.rglob("*") if p.is_file() and "wandb" not in p.parts}
    tested = main(
        [
            "test",
            "--config",
            str(fit_run / "config.yaml"),
            "--ckpt_path",
            str(best),
            "--trainer.enable_progress_bar=false",
        ]
    )
    test_run = Path(tested.trainer.default_root_dir)
    assert test_run.parent == fit_run.parent and test_run.name.endswith("_test")
    assert all(path.read_bytes() == content for path, content in before.items())


# --- data (damaged data files: tests/test_data_faults.py, every loader against every kind of damage) ----


def test_a_missing_data_folder_says_where_to_put_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEWORK_DATA_DIR", str(tmp_path))
    message = fails(capsys, ["fit", "--config", "domains/graph/gat_cora.yaml", *ONE_STEP])
    assert f"{tmp_path / 'Planetoid'}" in message and "Get the data set from" in message
    nothing_left()


def copy_data(shared_data, tmp_path, monkeypatch, folder: str) -> Path:
    """A private copy of a real data set, made the data root, so that a test can damage it."""
    source = shared_data(folder)
    target = tmp_path / folder
    shutil.copytree(source, target)
    monkeypatch.setenv("FRAMEWORK_DATA_DIR", str(tmp_path))
    return target


def test_a_multi30k_file_that_is_no_gzip_is_named(capsys, shared_data, tmp_path, monkeypatch):
    folder = copy_data(shared_data, tmp_path, monkeypatch, "multi30k")
    (folder / "train.de.gz").write_bytes(b"plain text, not gzip\n")
    message = fails(capsys, ["fit", "--config", "domains/nlp/seq2seq_luong_multi30k.yaml", *ONE_STEP])
    assert str(folder / "train.de.gz") in message


def test_a_trec_folder_without_its_files_says_which(capsys, tmp_path, monkeypatch):
    (tmp_path / "TREC").mkdir()
    monkeypatch.setenv("FRAMEWORK_DATA_DIR", str(tmp_path))
    message = fails(capsys, ["fit", "--config", "domains/nlp/selfattentive_trec.yaml", *ONE_STEP])
    assert "train_5500.label" in message


@pytest.mark.parametrize(
    "subcommand, flag",
    [
        ("fit", "--trainer.limit_train_batches=0"),
        ("fit", "--trainer.max_epochs=0"),
        ("fit", "--trainer.max_steps=0"),
        ("fit", "--trainer.limit_train_batches=0.0"),
        ("test", "--trainer.limit_test_batches=0"),
        ("predict", "--trainer.limit_predict_batches=0"),
    ],
)
def test_a_limit_that_leaves_nothing_to_run_is_named(capsys, subcommand, flag):
    untrained = [] if subcommand == "fit" else ["--untrained=true"]
    message = fails(capsys, [subcommand, *DEMO, *untrained, flag])
    assert f"{flag[2:]} leaves {subcommand} nothing to run" in message
    nothing_left()


def test_an_empty_predict_file_is_named(capsys, tmp_path):
    blank = tmp_path / "texts.txt"
    blank.write_text("\n  \n")
    message = fails(
        capsys,
        [
            "predict",
            "--config",
            "domains/nlp/selfattentive.yaml",
            *ONE_STEP,
            "--untrained=true",
            "--data.train_size=64",
            "--data.val_size=16",
            "--data.test_size=16",
            f"--data.predict_file={blank}",
        ],
    )
    assert f"{blank} (data.predict_file, a text per line) is empty" in message
    nothing_left()


@pytest.mark.slow
def test_audio_with_nan_samples_stops_at_the_first_step_and_saves_nothing(capsys, shared_data, tmp_path, monkeypatch):
    import numpy as np
    import soundfile

    folder = copy_data(shared_data, tmp_path, monkeypatch, "fsdd") / "recordings"
    for path in sorted(folder.glob("*.wav")):
        samples, rate = soundfile.read(path, dtype="float32")
        samples[len(samples) // 2] = np.nan
        soundfile.write(path, samples, rate, subtype="FLOAT")
    message = fails(capsys, ["fit", "--config", "domains/audio/cnn_fsdd.yaml", *ONE_STEP])
    assert "is not finite at step 0" in message
    assert not list(runs_root().rglob("*.ckpt"))


# --- training -------------------------------------------------------------------------------------


def test_a_diverging_run_stops_naming_step_batch_and_learning_rate_and_saves_no_nan(capsys):
    message = fails(capsys, ["fit", *DEMO, "--optimizer.lr=1e10", "--trainer.max_epochs=3"])
    assert "training stopped:" in message and "is not finite at step" in message and "learning rate 1e+10" in message
    for checkpoint in runs_root().rglob("*.ckpt"):
        state = torch.load(checkpoint, weights_only=True)["state_dict"]
        assert all(torch.isfinite(w).all() for w in state.values() if w.is_floating_point()), checkpoint


def test_a_runs_folder_that_cannot_be_made_is_named(capsys, tmp_path, monkeypatch):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the runs folder should be")
    monkeypatch.setenv("FRAMEWORK_RUNS_DIR", str(blocker / "runs"))
    assert str(blocker) in fails(capsys, ["fit", *DEMO])


def test_permission_denied_on_the_runs_folder_is_named(capsys, monkeypatch):
    real_mkdir = Path.mkdir

    def denied(self, *args, **kwargs):
        if "demo" in self.parts:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", denied)
    assert "error: Permission denied:" in fails(capsys, ["fit", *DEMO])


# --- the catalogue -----------------------------------------------------------------------------------


def test_blocks_of_an_unknown_kind_is_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["blocks", "graphs"])
    assert stop.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
