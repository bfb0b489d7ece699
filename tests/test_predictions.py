"""``predict`` writes what each task predicts into the run folder, in the format its task documents."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from framework.__main__ import main

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end

QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false", "--trainer.logger=false"]
SHORT = ["--trainer.max_steps=1", "--trainer.limit_val_batches=1", "--trainer.num_sanity_val_steps=0"]


def fit_then_predict(config: str, *data: str) -> tuple[Path, int]:
    """The predictions folder of a predict run from a one-step fit, and how many examples it predicted."""
    fitted = main(["fit", "--config", config, *QUIET, *SHORT, *data])
    best = Path(fitted.trainer.checkpoint_callback.last_model_path)
    predicted = main(["predict", "--config", config, *QUIET, "--ckpt_path", str(best), *data])
    examples = len(predicted.datamodule.predict_dataloader().dataset)
    return Path(predicted.trainer.default_root_dir) / "predictions", examples


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_classifier_writes_class_ids_and_scores():
    folder, examples = fit_then_predict("domains/demo/demo.yaml", "--data.train_size=64", "--data.test_size=40")
    table = rows(folder / "predictions.csv")
    assert len(table) == examples == 40 and [int(r["example"]) for r in table] == list(range(40))
    assert all(0 <= int(r["class"]) < 10 and 0.0 < float(r["score"]) <= 1.0 for r in table)


def test_a_text_classifier_writes_class_names():
    folder, examples = fit_then_predict("domains/nlp/selfattentive.yaml", "--data.train_size=64", "--data.test_size=16")
    table = rows(folder / "predictions.csv")
    assert len(table) == examples and {r["class"] for r in table} <= {"negative", "neutral", "positive"}


def test_a_translator_writes_one_line_per_source():
    folder, examples = fit_then_predict(
        "domains/nlp/seq2seq_bahdanau.yaml", "--data.train_size=64", "--data.test_size=12"
    )
    assert len((folder / "translations.txt").read_text().splitlines()) == examples == 12


def test_a_segmentation_writes_paletted_label_masks():
    folder, examples = fit_then_predict(
        "domains/vision/ccnet.yaml", "--data.train_size=8", "--data.test_size=3", "--data.val_size=4"
    )
    masks = sorted((folder / "masks").glob("*.png"))
    assert [p.name for p in masks] == ["000000.png", "000001.png", "000002.png"] and examples == 3
    image = Image.open(masks[0])
    assert image.mode == "P" and image.size == (64, 64) and np.asarray(image).max() < 11


def test_a_recommender_writes_the_top_items_of_each_user():
    folder, examples = fit_then_predict("domains/recommender/sasrec.yaml", "--data.num_users=40")
    table = rows(folder / "recommendations.csv")
    assert len(table) == examples and all(len(r["top10_items"].split()) == 10 for r in table)
    assert sorted(int(r["user"]) for r in table) == list(range(examples))


def test_a_node_classifier_writes_node_ids():
    folder, _ = fit_then_predict("domains/graph/gat.yaml")
    table = rows(folder / "predictions.csv")
    assert table and all(0 <= int(r["node"]) < 34 and 0 <= int(r["class"]) < 4 for r in table)


@pytest.mark.parametrize("subcommand", ["validate", "test"])
def test_evaluation_writes_no_predictions(subcommand):
    fitted = main(["fit", "--config", "domains/demo/demo.yaml", *QUIET, *SHORT, "--data.train_size=64"])
    run = main(
        [
            subcommand,
            "--config",
            "domains/demo/demo.yaml",
            *QUIET,
            "--data.train_size=64",
            "--ckpt_path",
            fitted.trainer.checkpoint_callback.last_model_path,
        ]
    )
    assert not (Path(run.trainer.default_root_dir) / "predictions").exists()
