"""Every NLP config through the command line, and predict from a checkpoint alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from framework.__main__ import main
from tests.conftest import ONE_BATCH, accelerator
from tests.image_logger import logged_pictures

CONFIGS = Path("domains/nlp")
QUIET = ["--config", "configs/logger/csv.yaml", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false", "--data.batch_size=16", "--data.eval_batch_size=16"]
SMALL = {  # generated and real data cut down, so that every config runs in seconds
    "GeneratedReviews": ["--data.train_size=64", "--data.val_size=16", "--data.test_size=16"],
    "DateNormalization": ["--data.train_size=64", "--data.val_size=16", "--data.test_size=16"],
    "Multi30k": ["--data.train_size=300", "--data.vocab_size=500", "--model.vocab_size=500", "--model.dim=32",
                 "--task.max_length=8"],
    "TREC": [],
    "LongRangeMatch": ["--data.train_size=32", "--data.val_size=16", "--data.test_size=16", "--data.min_length=32",
                       "--data.max_length=64"],
    "NumberSorting": ["--data.train_size=64", "--data.val_size=16", "--data.test_size=16"],
}


def small(config: Path) -> list[str]:
    """The cut-down arguments of the data set that ``config`` reads (``data: datasets/<name>.yaml``)."""
    data = yaml.safe_load((config.parent / yaml.safe_load(config.read_text())["data"]).read_text())
    return SMALL[data["class_path"].rsplit(".", 1)[-1]]


@pytest.mark.parametrize("config", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_config_runs_one_batch(config, shared_data, device):
    if "trec" in config.stem or "multi30k" in config.stem:
        shared_data("TREC" if "trec" in config.stem else "multi30k")
    cli = main(["fit", "--config", str(config), *QUIET, *small(config), "--trainer.fast_dev_run=true",
                *ONE_BATCH, f"--trainer.accelerator={accelerator(device)}"])
    assert {"images/alignment", "images/word_attention"} & set(logged_pictures(cli.trainer))
    metrics = cli.trainer.callback_metrics
    assert "train/loss" in metrics and "val/loss" in metrics
    if hasattr(cli.datamodule, "tokenizer"):  # text data (not the generated numbers of sorting)
        assert cli.model.task.tokenizer is cli.datamodule.tokenizer  # trained on the training split, handed to the task
    if "bleu" in cli.model.task.monitor:
        assert {"val/bleu", "val/exact", "val/token_acc", "val/ppl"} <= set(metrics)


def test_predict_decodes_text_with_the_checkpoints_tokeniser(tmp_path):
    args = ["--config", str(CONFIGS / "seq2seq_luong.yaml"), *QUIET, "--data.val_size=16", "--data.test_size=16"]
    fitted = main(["fit", *args, "--data.train_size=64", "--trainer.max_epochs=1"])
    best = Path(fitted.trainer.default_root_dir) / "checkpoints" / "best.ckpt"
    stored = torch.load(best, weights_only=True)["state_dict"]["task._extra_state"]["tokenizer"]
    (tmp_path / "dates.txt").write_text("9 May 1998\nSaturday, 9 May 1998\n")
    # A data module that would train another tokeniser (other texts) must use the checkpoint's.
    predicted = main(["predict", *args, "--data.train_size=4", "--data.seed=7", "--ckpt_path", str(best),
                      f"--data.predict_file={tmp_path / 'dates.txt'}"])
    assert predicted.datamodule.tokenizer is predicted.model.task.tokenizer
    assert predicted.model.task.tokenizer.to_str() == stored
    outputs = predicted.trainer.predict_loop.predictions
    assert len(outputs) == 1 and len(outputs[0]) == 2 and all(isinstance(s, str) for s in outputs[0])


def test_a_model_vocabulary_smaller_than_the_data_vocabulary_is_refused():
    with pytest.raises(ValueError, match=r"model.vocab_size is 20 but the data has 64: set model.vocab_size=64 or more"):
        main(["fit", "--config", str(CONFIGS / "seq2seq_bahdanau.yaml"), *QUIET, *SMALL["DateNormalization"],
              "--model.vocab_size=20", "--trainer.fast_dev_run=true"])


def test_an_unknown_cross_block_fails_while_the_config_is_parsed(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(CONFIGS / "seq2seq_luong.yaml"), *QUIET, "--model.attention=genral"])
    assert "unknown cross block 'genral'; did you mean: general" in capsys.readouterr().err
