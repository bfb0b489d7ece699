"""NLP through the command line: predict from a checkpoint alone with its tokeniser, sizes and block
names checked (every config's run: tests/test_configs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from framework.__main__ import main

CONFIGS = Path("domains/nlp")
QUIET = [
    "--config",
    "configs/logger/csv.yaml",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--data.batch_size=16",
    "--data.eval_batch_size=16",
]
SMALL_DATES = ["--data.train_size=64", "--data.val_size=16", "--data.test_size=16"]


def test_predict_decodes_text_with_the_checkpoints_tokeniser(tmp_path):
    args = ["--config", str(CONFIGS / "seq2seq_luong.yaml"), *QUIET, "--data.val_size=16", "--data.test_size=16"]
    fitted = main(["fit", *args, "--data.train_size=64", "--trainer.max_epochs=1"])
    assert fitted.model.task.tokenizer is fitted.datamodule.tokenizer  # trained on the training split, handed over
    best = Path(fitted.trainer.default_root_dir) / "checkpoints" / "best.ckpt"
    stored = torch.load(best, weights_only=True)["state_dict"]["task._extra_state"]["tokenizer"]
    (tmp_path / "dates.txt").write_text("9 May 1998\nSaturday, 9 May 1998\n")
    # A data module that would train another tokeniser (other texts) must use the checkpoint's.
    predicted = main(
        [
            "predict",
            *args,
            "--data.train_size=4",
            "--data.seed=7",
            "--ckpt_path",
            str(best),
            f"--data.predict_file={tmp_path / 'dates.txt'}",
        ]
    )
    assert predicted.datamodule.tokenizer is predicted.model.task.tokenizer
    assert predicted.model.task.tokenizer.to_str() == stored
    outputs = predicted.trainer.predict_loop.predictions
    assert len(outputs) == 1 and len(outputs[0]) == 2 and all(isinstance(s, str) for s in outputs[0])


def test_a_model_vocabulary_smaller_than_the_data_vocabulary_is_refused():
    with pytest.raises(
        ValueError, match=r"model.vocab_size is 20 but the data has 64: set model.vocab_size=64 or more"
    ):
        main(
            [
                "fit",
                "--config",
                str(CONFIGS / "seq2seq_bahdanau.yaml"),
                *QUIET,
                *SMALL_DATES,
                "--model.vocab_size=20",
                "--trainer.fast_dev_run=true",
            ]
        )


def test_an_unknown_cross_block_fails_while_the_config_is_parsed(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(CONFIGS / "seq2seq_luong.yaml"), *QUIET, "--model.attention=genral"])
    assert "unknown cross block 'genral'; did you mean: general" in capsys.readouterr().err


@pytest.mark.parametrize(
    "config, flag",
    [
        ("transformer_cls.yaml", "--data.tokenizer=sentencepiece"),
        ("transformer_cls.yaml", "--data.vocab_size=4"),
        ("transformer_cls.yaml", "--model.readout=max"),
        ("transformer_cls_long.yaml", "--data.min_length=4"),
        ("transformer_cls_long.yaml", "--data.keys=1"),
        ("selfattentive.yaml", "--task.penalty=-1"),
        ("capsule_trec.yaml", "--model.attention=capsules"),
        ("capsule_trec.yaml", "--model.embeddings=[word,chars]"),
        ("seq2seq_bahdanau.yaml", "--model.style=sutskever"),
        ("seq2seq_luong.yaml", "--task.decoding=sample"),
        ("seq2seq_luong.yaml", "--task.attention_supervision=-1"),
        ("seq2seq_luong.yaml", "--task.decouple_attention=-1"),
        ("pointer_sort.yaml", "--model.score=addtive"),
    ],
)
def test_a_value_outside_its_keys_domain_fails_while_the_config_is_parsed(capsys, monkeypatch, config, flag):
    """Exit status 2 and one line naming the key and the value, before anything is built."""
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")
    key, _, value = flag.removeprefix("--").partition("=")
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--config", str(CONFIGS / config), *QUIET, flag])
    assert stop.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {key}: ")
    assert value.strip("[]").split(",")[-1] in errors[0]
