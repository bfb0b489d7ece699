"""Recommenders through the command line: a short fit then a test from its checkpoint under both
protocols, block names and sizes checked (every config's run: tests/test_configs.py)."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pytest

from domains.recommender import NextItemRanking, SASRec, UserItemSequences
from domains.recommender.data import modules as data_modules
from framework import TaskModule
from framework.__main__ import main

CONFIGS = Path(__file__).resolve().parents[3] / "domains" / "recommender"
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
SMALL_DATA = ["--data.num_users=200", "--data.max_len=20", "--data.eval_batch_size=32"]


@pytest.mark.slow
def test_a_fitted_checkpoint_is_tested_under_both_protocols():
    cli = main(
        [
            "fit",
            "--config",
            str(CONFIGS / "popularity.yaml"),
            "--config",
            "configs/logger/csv.yaml",
            *SMALL_DATA,
            *QUIET,
        ]
    )
    trained = {name for name in cli.trainer.callback_metrics if name.startswith("train/")}
    assert trained == {"train/loss", "train/mrr_sampled1"}  # no train/hr@10 among 2 candidates
    best = Path(cli.trainer.default_root_dir) / "checkpoints" / "best.ckpt"
    tested = main(
        [
            "test",
            "--config",
            str(CONFIGS / "popularity.yaml"),
            "--config",
            "configs/logger/csv.yaml",
            "--ckpt_path",
            str(best),
            *SMALL_DATA,
            *QUIET,
        ]
    )
    full = float(tested.trainer.callback_metrics["test/hr@10"])
    assert full > 0.05  # the counts came back with the checkpoint
    # --task.* on the command line wins over the checkpoint's task: the other protocol.
    sampled = main(
        [
            "test",
            "--config",
            str(CONFIGS / "popularity.yaml"),
            "--config",
            "configs/logger/csv.yaml",
            "--ckpt_path",
            str(best),
            "--task.protocol=sampled",
            *SMALL_DATA,
            *QUIET,
        ]
    )
    metrics = sampled.trainer.callback_metrics
    assert {"test/hr@10_sampled100", "test/ndcg@10_sampled100", "test/mrr_sampled100"} <= set(metrics)
    assert metrics["test/hr@10_sampled100"] > full


def test_a_misspelt_block_fails_at_parse_time(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(CONFIGS / "sasrec.yaml"), "--model.attention=mhsaa", *QUIET])
    assert "unknown sequence block 'mhsaa'; did you mean: mhsa" in capsys.readouterr().err


@pytest.mark.parametrize(
    "config, option, message",
    [
        ("sasrec", "--task.protocol=uni100", "task.protocol: "),
        ("sasrec", "--task.loss=bpr", "task.loss: "),
        ("bert4rec", "--task.mask_prob=0", "task.mask_prob: expected a number in (0, 1], got '0'"),
        ("sasrec", "--task.k=0", "task.k: expected an int >= 1, got '0'"),
        ("sasrec", "--data.max_len=0", "data.max_len: expected an int >= 1, got '0'"),
        ("sasrec", "--data.num_tastes=0", "data.num_tastes: expected an int >= 1, got '0'"),
        ("popularity_ml100k", "--data.min_user_interactions=2", "data.min_user_interactions: expected an int >= 3"),
        ("gru4rec", "--model.dropout=1.0", "model.dropout: expected a number in [0, 1), got '1.0'"),
    ],
)
def test_a_value_outside_its_keys_domain_fails_while_parsing_with_the_key(capsys, monkeypatch, config, option, message):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)  # the one-line error a user sees
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--config", str(CONFIGS / f"{config}.yaml"), option, *QUIET])
    assert stop.value.code == 2
    line = capsys.readouterr().err.splitlines()[0]
    assert line.startswith(f"error: {message}") and option.partition("=")[2] in line


def test_a_model_sized_for_other_items_fails_when_the_run_starts():
    with pytest.raises(ValueError, match="model.num_items is 500 but the data has 400 items"):
        main(
            [
                "fit",
                "--config",
                str(CONFIGS / "sasrec.yaml"),
                "--trainer.fast_dev_run=true",
                *SMALL_DATA,
                *QUIET,
                "--model.num_items=500",
            ]
        )


@pytest.fixture
def no_negatives(monkeypatch):
    """The negatives' draw and cache, made to fail: a run that reaches them fails with this."""

    def refuse(*args, **kwargs):
        raise AssertionError("the negatives were drawn")

    monkeypatch.setattr(data_modules, "sample_negatives", refuse)
    monkeypatch.setattr(data_modules, "cached_negatives", refuse)


def test_a_size_mismatch_fails_before_the_negatives_are_drawn(tmp_path, no_negatives):
    path = tmp_path / "file.txt"
    path.write_text("".join(f"{u} {(u * 7 + k) % 50 + 1}\n" for u in range(1, 41) for k in range(4)))
    data = UserItemSequences(path=str(path), max_len=4)
    module = TaskModule(SASRec(49, dim=8, max_len=4), NextItemRanking())
    trainer = pl.Trainer(fast_dev_run=True, logger=False, enable_progress_bar=False, enable_model_summary=False)
    with pytest.raises(ValueError, match="model.num_items is 49 but the data has 50 items: set model.num_items=50"):
        trainer.fit(module, datamodule=data)
    with pytest.raises(AssertionError, match="the negatives were drawn"):  # the right size gets that far
        pl.Trainer(fast_dev_run=True, logger=False, enable_progress_bar=False, enable_model_summary=False).fit(
            TaskModule(SASRec(50, dim=8, max_len=4), NextItemRanking()), datamodule=UserItemSequences(path=str(path))
        )
