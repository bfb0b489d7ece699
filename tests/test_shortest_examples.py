"""Every data module takes the shortest examples its format allows: each reader of a real format
is given a data set made of them, written here (no shared data needed), and each of its configs
trains a step and validates with finite losses.

The shortest examples are those the format and the data module's documented minimum allow: a
SASRec-format or MovieLens user with 3 interactions (leave-one-out's minimum: a single training
item, so no next-item position to train on), a question, sentence or text of one word, a bAbI
question with no story before it (an empty memory), a clip of one sample, a CamVid training image
whose every pixel is void, a MovieLens user who rated nothing (no neighbour along a meta-path).
Each is a batch where some or all positions are padding: the class of "no real positions"
(``tests/attention/test_fully_masked.py``, ``tests/test_no_real_positions.py``).

A format not here has no shorter example than its usual ones (MNIST's 28 x 28 images, image
folders resized to one size) or cannot be cut down without leaving its format (Planetoid's public
split needs 500 validation nodes after the training ones).
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from framework.__main__ import main

#: One training step, one validation batch, the metrics written (to read the losses back).
ONE_STEP = [
    "--trainer.max_steps=1",
    "--trainer.max_epochs=1",
    "--trainer.limit_train_batches=1",
    "--trainer.limit_val_batches=1",
    "--trainer.num_sanity_val_steps=0",
    "--trainer.log_every_n_steps=1",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--config",
    "configs/logger/csv.yaml",
]
WORDS = ("alpha", "beta", "gamma", "delta", "omega")


def lines(path: Path, rows: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(f"{row}\n" for row in rows).encode("latin-1")
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


def user_items(root: Path) -> None:
    """40 users of 3 items each, ``user item`` lines."""
    rng = np.random.default_rng(0)
    lines(root / "sasrec/three.txt", [f"{u} {i}" for u in range(1, 41) for i in rng.choice(30, 3, replace=False) + 1])


def movielens_ratings(root: Path) -> None:
    """MovieLens ``u.data`` with 3 ratings per user."""
    rng = np.random.default_rng(0)
    rows = [
        f"{u}\t{i}\t{rng.integers(1, 6)}\t{881250949 + 10 * u + k}"
        for u in range(1, 41)
        for k, i in enumerate(rng.choice(30, 3, replace=False) + 1)
    ]
    lines(root / "MovieLens100K/raw/u.data", rows)


def trec(root: Path) -> None:
    """TREC label files whose questions are one word each, every coarse class in both."""
    classes = ("ABBR:abb", "DESC:def", "ENTY:animal", "HUM:ind", "LOC:city", "NUM:date")
    lines(root / "TREC/train_5500.label", [f"{label} {word}" for label in classes for word in WORDS])
    lines(root / "TREC/TREC_10.label", [f"{label} {WORDS[0]}" for label in classes])


def labelled(root: Path) -> None:
    """``label<TAB>text`` files of one-word texts."""
    for name in ("train.tsv", "test.tsv"):
        lines(root / "corpus" / name, [f"{label}\t{word}" for label in ("yes", "no") for word in WORDS])


def multi30k(root: Path) -> None:
    """Multi30k's six files, a one-word sentence per line."""
    for split in ("train", "val", "test_2016_flickr"):
        for lang in ("de", "en"):
            lines(root / f"multi30k/{split}.{lang}.gz", [f"{word}{lang}" for word in WORDS * 4])


def babi(root: Path) -> None:
    """All 40 bAbI files, each a question with no sentence before it (an empty story) and a
    question after one sentence."""
    from domains.memory.data.babi import FILES

    for name in FILES:
        lines(
            root / "babi/tasks_1-20_v1-2/en" / name,
            ["1 Where is Mary?\tkitchen\t", "1 Mary went to the garden.", "2 Where is Mary?\tgarden\t1"] * 4,
        )


def wav(path: Path, samples: int = 1, rate: int = 8000) -> None:
    import soundfile

    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(path, np.full(samples, 0.5), rate, subtype="PCM_16")


def fsdd(root: Path) -> None:
    """FSDD recordings of one sample each: every digit, test index 0, training indices 5-9."""
    for digit in range(10):
        for index in (0, 5, 6, 7, 8, 9):
            wav(root / f"fsdd/recordings/{digit}_george_{index}.wav")


def speech_commands(root: Path) -> None:
    """Speech Commands clips of one sample each, three words, with the two lists."""
    version = root / "SpeechCommands/speech_commands_v0.02"
    for word in ("zero", "one", "two"):
        for index in range(4):
            wav(version / word / f"george_nohash_{index}.wav")
    lines(version / "validation_list.txt", [f"{word}/george_nohash_1.wav" for word in ("zero", "one", "two")])
    lines(version / "testing_list.txt", [f"{word}/george_nohash_0.wav" for word in ("zero", "one", "two")])


def camvid(root: Path) -> None:
    """CamVid pairs whose training label maps are void (11) at every pixel."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for split in ("train", "val", "test"):
        for index in range(2):
            (root / "CamVid" / split).mkdir(parents=True, exist_ok=True)
            (root / "CamVid" / f"{split}annot").mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 255, (32, 48, 3), dtype=np.uint8)).save(
                root / f"CamVid/{split}/{index}.png"
            )
            labels = np.full((32, 48), 11, np.uint8) if split == "train" else rng.integers(0, 11, (32, 48), np.uint8)
            Image.fromarray(labels).save(root / f"CamVid/{split}annot/{index}.png")


def movielens_users(root: Path) -> None:
    """MovieLens' four files for 16 users (4 per age bracket) of whom half rated nothing."""
    from domains.graph.data.movielens import GENRES

    raw = root / "MovieLens100K/raw"
    lines(raw / "u.occupation", ["artist", "doctor"])
    ages = (20, 30, 40, 60)
    lines(
        raw / "u.user",
        [f"{u}|{ages[(u - 1) % 4]}|{'MF'[u % 2]}|{('artist', 'doctor')[u % 2]}|0{u:04d}" for u in range(1, 17)],
    )
    flags = lambda film: "|".join("1" if g == film % len(GENRES) else "0" for g in range(len(GENRES)))
    lines(raw / "u.item", [f"{film}|Film {film}|01-Jan-1995||http://example.org|{flags(film)}" for film in range(1, 6)])
    lines(raw / "u.data", [f"{u}\t{1 + u % 5}\t4\t{881250949 + u}" for u in range(1, 9)])


@dataclass
class Shortest:
    """A format's shortest examples: the files (written under the data root) and the command lines
    of its configs (``{root}``: the data root)."""

    write: Callable[[Path], None]
    runs: dict[str, list[str]]


RECOMMENDER = [
    "--data=domains.recommender.UserItemSequences",
    "--data.path=sasrec/three.txt",
    "--data.num_negatives=2",
]
RATINGS = ["--data.min_user_interactions=3", "--data.min_item_interactions=1", "--data.num_negatives=2"]
TREC = ["--data.val_size=6"]
LABELLED = [
    "--data=domains.nlp.LabelledText",
    "--data.root={root}/corpus",
    "--data.splits={train: [train.tsv], test: [test.tsv]}",
    "--data.val_size=2",
]
SHORTEST = {
    "user_item_file": Shortest(
        user_items,
        {
            name: ["--config", f"domains/recommender/{name}_ml100k.yaml", *RECOMMENDER]
            for name in ("sasrec", "bert4rec", "gru4rec", "din")
        },
    ),
    "movielens": Shortest(
        movielens_ratings,
        {name: ["--config", f"domains/recommender/{name}_ml100k.yaml", *RATINGS] for name in ("sasrec", "bert4rec")},
    ),
    "trec": Shortest(
        trec,
        {
            name: ["--config", f"domains/nlp/{name}_trec.yaml", *TREC]
            for name in ("selfattentive", "han", "transformer_cls", "capsule", "via")
        },
    ),
    "labelled_text": Shortest(
        labelled, {"selfattentive": ["--config", "domains/nlp/selfattentive_trec.yaml", *LABELLED]}
    ),
    "multi30k": Shortest(
        multi30k,
        {
            name: ["--config", f"domains/nlp/{name}_multi30k.yaml", "--data.vocab_size=60"]
            for name in ("seq2seq_bahdanau", "seq2seq_luong", "transformer_mt")
        },
    ),
    "babi": Shortest(
        babi, {name: ["--config", f"domains/memory/{name}_babi.yaml"] for name in ("memn2n", "dmn", "reader")}
    ),
    "fsdd": Shortest(
        fsdd,
        {name: ["--config", f"domains/audio/{name}_fsdd.yaml"] for name in ("cnn", "transformer", "crnn_attention")},
    ),
    "speech_commands": Shortest(
        speech_commands,
        {
            "cnn": [
                "--config",
                "domains/audio/cnn_fsdd.yaml",
                "--data=domains.audio.SpeechCommands",
                "--data.sample_rate=8000",
            ]
        },
    ),
    "camvid": Shortest(
        camvid,
        {
            name: ["--config", f"domains/vision/{name}_camvid.yaml", "--data.batch_size=2", "--data.crop_size=[32,32]"]
            for name in ("ccnet", "fcn")
        },
    ),
    "movielens_users": Shortest(
        movielens_users,
        {"han": ["--config", "domains/graph/han_movielens.yaml", "--data.train_per_class=1", "--data.neighbours=4"]},
    ),
}
RUNS = [(fmt, config) for fmt, shortest in SHORTEST.items() for config in shortest.runs]


def finite_losses(run_dir: Path) -> dict[str, float]:
    """The losses a run logged (its ``metrics.csv``): every ``*loss*`` column's values."""
    import csv

    (path,) = run_dir.rglob("metrics.csv")
    with open(path) as file:
        rows = list(csv.DictReader(file))
    return {key: float(row[key]) for row in rows for key in row if "loss" in key and row[key] != ""}


@pytest.mark.parametrize("fmt, config", RUNS, ids=[f"{fmt}-{config}" for fmt, config in RUNS])
@pytest.mark.slow
def test_the_shortest_examples_train_with_finite_losses(tmp_path, monkeypatch, fmt, config):
    root = tmp_path / "data"
    SHORTEST[fmt].write(root)
    monkeypatch.setenv("FRAMEWORK_DATA_DIR", str(root))
    argv = [arg.replace("{root}", str(root)) for arg in SHORTEST[fmt].runs[config]]
    cli = main(["fit", *argv, *ONE_STEP, f"--run_dir={tmp_path / 'run'}"])
    assert cli.trainer.state.finished and cli.trainer.global_step == 1
    losses = finite_losses(tmp_path / "run")
    assert {"train/loss_step", "val/loss"} <= losses.keys(), losses
    assert all(math.isfinite(value) for value in losses.values()), losses
    data = json.loads((tmp_path / "run" / "summary.json").read_text())["fit"]["provenance"]["data"]
    assert data["content_key"], f"{fmt}: the provenance hashes no file of the data (its sources: {data['sources']})"
