"""Sizes stated once: the CLI fills the model's and task's unset sizes from the data module."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from framework.__main__ import main
from framework.data.sizes import fill_sizes
from framework.errors import ConfigError
from tests.test_cli import SMALL


class LateSizes:
    """A data module that knows its class count only once set up."""

    def __init__(self) -> None:
        self.num_classes, self.setups = None, 0

    def setup(self, stage: str) -> None:
        self.setups += 1
        self.num_classes = 7


def test_unset_sizes_come_from_the_data_and_stated_ones_stay():
    arguments = {"model": {"vocab_size": None, "num_classes": 4, "dim": None}, "task": {"num_classes": None}}
    filled = fill_sizes(arguments, SimpleNamespace(vocab_size=50, num_classes=3))
    assert filled == {"model.vocab_size": 50, "task.num_classes": 3}
    # dim is no size; a stated size is kept (the task's check compares it with the data's later)
    assert arguments == {"model": {"vocab_size": 50, "num_classes": 4, "dim": None}, "task": {"num_classes": 3}}


def test_a_size_known_after_set_up_sets_the_data_up_once():
    data = LateSizes()
    arguments = {"model": {"num_classes": None}, "task": {"num_classes": None}}
    fill_sizes(arguments, data)
    assert arguments == {"model": {"num_classes": 7}, "task": {"num_classes": 7}} and data.setups == 1
    fill_sizes({"model": {"num_classes": 2}}, data)  # nothing unset: no set-up
    assert data.setups == 1


def test_a_size_the_data_does_not_state_names_the_key():
    with pytest.raises(
        ConfigError,
        match=r"^model.in_channels is not set and the data \(SimpleNamespace\) does not "
        r"state it: set model.in_channels$",
    ):
        fill_sizes({"model": {"in_channels": None}}, SimpleNamespace(num_classes=True))  # a bool is no size


def test_changing_the_data_needs_no_hand_edited_sizes():
    # The demo with 6 values instead of 10: 6 classes and a smaller vocabulary, and no --model.* flags.
    cli = main(
        ["fit", *SMALL, "--data.num_values=6", "--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1"]
    )
    data, model, task = cli.datamodule, cli.model.model, cli.model.task
    assert (data.num_classes, data.vocab_size) == (6, 16 * 7 + 1)
    assert (model.num_classes, model.head.out_features, task.num_classes) == (6, 6, 6)
    assert model.tokens.num_embeddings == data.vocab_size
    # The run folder's config records the sizes used, so that it rebuilds the same model.
    saved = yaml.safe_load((Path(cli.trainer.default_root_dir) / "config.yaml").read_text())
    assert saved["model"]["init_args"]["num_classes"] == 6 and saved["task"]["init_args"]["num_classes"] == 6
    assert saved["model"]["init_args"]["vocab_size"] == data.vocab_size


def test_graph_features_and_classes_come_from_the_graph():
    cli = main(
        [
            "fit",
            "--config",
            "domains/graph/gat.yaml",
            "--config",
            "configs/logger/csv.yaml",
            "--trainer.max_epochs=1",
            "--trainer.enable_progress_bar=false",
        ]
    )
    model = cli.model.model
    assert (model.in_channels, model.num_classes, cli.model.task.num_classes) == (34, 4, 4)


#: Every model and task that takes a size from the data, and the sizes it needs.
NEEDS_SIZES = [
    ("domains.audio.SpectrogramCNN", "model.num_classes"),
    ("domains.audio.CRNN", "model.num_classes"),
    ("domains.audio.SpectrogramTransformer", "model.num_classes"),
    ("domains.demo.SequenceClassifier", "model.vocab_size, model.num_classes"),
    ("domains.demo.SetClassifier", "model.vocab_size, model.num_classes"),
    ("domains.graph.NodeClassifier", "model.in_channels, model.num_classes"),
    ("domains.graph.HANClassifier", "model.in_channels, model.num_classes, model.metapaths"),
    ("domains.graph.NodeClassification", "task.num_classes"),
    ("domains.graph.HeteroNodeClassification", "task.num_classes"),
    ("domains.memory.MemN2N", "model.vocab_size"),
    ("domains.memory.KVMemNN", "model.vocab_size"),
    ("domains.memory.MatchingReader", "model.vocab_size"),
    ("domains.nlp.CharacterWordClassifier", "model.vocab_size, model.num_classes"),
    ("domains.nlp.HierarchicalAttentionNetwork", "model.vocab_size, model.num_classes"),
    ("domains.nlp.SelfAttentiveClassifier", "model.vocab_size, model.num_classes"),
    ("domains.nlp.RecurrentSeq2Seq", "model.vocab_size"),
    ("domains.nlp.TransformerSeq2Seq", "model.vocab_size"),
    ("domains.nlp.TransformerClassifier", "model.vocab_size, model.num_classes"),
    ("domains.nlp.TextClassification", "task.num_classes"),
    ("domains.nlp.CapsuleClassification", "task.num_classes"),
    ("domains.recommender.SASRec", "model.num_items"),
    ("domains.recommender.BERT4Rec", "model.num_items"),
    ("domains.recommender.GRU4Rec", "model.num_items"),
    ("domains.recommender.DIN", "model.num_items"),
    ("domains.recommender.MostPopular", "model.num_items"),
    ("domains.vision.AttentionResNet", "model.num_classes"),
    ("domains.vision.SegmentationNet", "model.num_classes"),
    ("domains.vision.ViTClassifier", "model.num_classes"),
    ("domains.vision.Segmentation", "task.num_classes"),
    ("domains.vision.ImageClassification", "task.num_classes"),
    ("framework.layers.AttentiveConvNet", "model.in_channels, model.num_classes"),
    ("framework.tasks.Classification", "task.num_classes"),
]


@pytest.mark.parametrize("path, keys", NEEDS_SIZES, ids=[path for path, _ in NEEDS_SIZES])
def test_a_class_built_in_python_without_its_sizes_names_them(path, keys):
    module, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(ConfigError) as error:
        cls()
    verb, pronoun = ("is", "it") if "," not in keys else ("are", "them")
    assert str(error.value) == (
        f"{keys} {verb} not set: give {pronoun}, or leave {pronoun} to the command line, "
        f"which takes {pronoun} from the data module"
    )
