"""Tasks: losses and penalty, the tokeniser in the state, pictures, learning on real and generated data."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from domains.nlp.data import TREC, DateNormalization, GeneratedReviews
from domains.nlp.data.tokenization import PAD, token_names
from domains.nlp.models import (
    HierarchicalAttentionNetwork,
    RecurrentSeq2Seq,
    SelfAttentiveClassifier,
    TransformerClassifier,
    TransformerSeq2Seq,
)
from domains.nlp.pictures import shown
from domains.nlp.tasks import TextClassification, Translation
from tests.conftest import on
from tests.image_logger import readable


def date_batch(size: int = 8):
    data = DateNormalization(
        tokenizer="char", vocab_size=64, train_size=200, val_size=size, test_size=size, batch_size=size
    )
    data.setup("fit")
    tokenizer = data.resolve_tokenizer()
    return tokenizer, next(iter(data.val_dataloader()))


def review_batch(sentences: bool = False):
    data = GeneratedReviews(vocab_size=128, train_size=100, val_size=4, test_size=4, batch_size=4, sentences=sentences)
    data.setup("fit")
    tokenizer = data.resolve_tokenizer()
    return tokenizer, data.labels(), next(iter(data.val_dataloader()))


def test_translation_loss_is_token_cross_entropy_and_decodings_feed_bleu_and_exact_match():
    tokenizer, batch = date_batch()
    task = Translation(max_length=12)
    task.attach(tokenizer)
    model = RecurrentSeq2Seq(64, dim=16, embed_dim=8).eval()
    step = task.step(model, batch, "val")
    inputs = torch.cat([torch.full_like(batch["target"][:, :1], 2), batch["target"][:, :-1]], 1)
    logits = model(batch["tokens"], batch["mask"], inputs)
    real = batch["target"] != PAD
    expected = -F.log_softmax(logits, -1).gather(-1, batch["target"].unsqueeze(-1)).squeeze(-1)[real].mean()
    torch.testing.assert_close(step.loss, expected)
    assert step.logs is None  # the step decodes nothing: the TaskModule asks for the decodings once per batch
    outputs, references = task.decode(model, batch)
    assert len(outputs) == 8 and references == [[r] for r in batch["references"]]
    metrics = task.generation_metrics()
    metrics.update(outputs, references)
    assert set(metrics) == {"bleu", "exact"} and metrics["exact"].compute() == 0 and metrics["exact"].total == 8
    predictions = task.predict(model, {"tokens": batch["tokens"], "mask": batch["mask"]})
    assert len(predictions) == 8 and all(isinstance(p, str) for p in predictions)


def test_the_tokeniser_and_labels_travel_in_the_state_dict():
    tokenizer, labels, batch = review_batch()
    task = TextClassification(num_classes=3)
    task.attach(tokenizer, labels)
    restored = TextClassification(num_classes=3)
    assert restored.tokenizer is None
    restored.load_state_dict(task.state_dict())
    assert restored.labels == labels and restored.tokenizer.to_str() == tokenizer.to_str()
    model = SelfAttentiveClassifier(128, 3, embed_dim=8, dim=16).eval()
    assert set(restored.predict(model, batch)) <= set(labels)
    with pytest.raises(RuntimeError, match="Translation has no tokenizer"):
        Translation().translate(model, batch["tokens"], batch["mask"])


def naive_frobenius(rows: torch.Tensor) -> torch.Tensor:
    """mean over the batch of sum_ij ((A A^T)_ij - delta_ij)^2, with explicit loops."""
    total = 0.0
    for a in rows:
        for i in range(a.shape[0]):
            for j in range(a.shape[0]):
                total = total + ((a[i] * a[j]).sum() - float(i == j)) ** 2
    return total / len(rows)


def test_frobenius_penalty_joins_the_loss_and_is_logged():
    tokenizer, labels, batch = review_batch()
    torch.manual_seed(0)
    model = SelfAttentiveClassifier(128, 3, embed_dim=8, dim=16, num_queries=3).eval()
    step = TextClassification(num_classes=3, penalty=0.5).step(model, batch, "train")
    output = model(batch["tokens"], batch["mask"], need_weights=True)
    penalty = naive_frobenius(output.attention)
    torch.testing.assert_close(step.logs["penalty"], penalty.detach())
    torch.testing.assert_close(step.loss, F.cross_entropy(output.logits, batch["target"]) + 0.5 * penalty)
    step.loss.backward()
    assert model.attention.queries.grad.abs().sum() > 0
    han = HierarchicalAttentionNetwork(128, 3, embed_dim=8, dim=16)
    with pytest.raises(ValueError, match="task.penalty=0.5 needs a model that returns attention rows"):
        TextClassification(num_classes=3, penalty=0.5).step(han, review_batch(sentences=True)[2], "train")


@pytest.mark.parametrize(
    "model",
    [
        RecurrentSeq2Seq(64, dim=16, embed_dim=8, attention="additive"),
        RecurrentSeq2Seq(64, dim=16, embed_dim=8, attention="local_p", style="luong"),
        TransformerSeq2Seq(64, dim=16),
    ],
)
def test_alignment_picture_of_the_first_example(model, device):
    tokenizer, batch = date_batch()
    model, batch = on(device, model.eval(), batch)
    task = Translation(max_length=12)
    task.attach(tokenizer)
    with torch.no_grad():
        images = task.images(model, batch)
    assert list(images) == ["alignment"]
    readable(fig := images["alignment"][0])
    ax = fig.axes[0]
    tokens, mask = batch["tokens"][0].cpu(), batch["mask"][0].cpu()
    source = [shown(token) for token in token_names(tokenizer, tokens[mask].tolist())]
    assert [label.get_text() for label in ax.get_xticklabels()] == source, "the source tokens name the columns"
    assert ax.images[0].get_array().shape == (len(ax.get_yticklabels()), len(source))
    assert task.images(on(device, RecurrentSeq2Seq(64, dim=16, embed_dim=8, attention="none").eval()), batch) == {}


@pytest.mark.parametrize(
    "sentences,model",
    [
        (False, SelfAttentiveClassifier(128, 3, embed_dim=8, dim=16)),
        (False, TransformerClassifier(128, 3, dim=16, readout="cls")),
        (True, HierarchicalAttentionNetwork(128, 3, embed_dim=8, dim=16)),
    ],
)
def test_word_highlights_of_the_first_example(sentences, model, device):
    tokenizer, labels, batch = review_batch(sentences)
    task = TextClassification(num_classes=3)
    task.attach(tokenizer, labels)
    with torch.no_grad():
        images = task.images(*on(device, model.eval(), batch))
    assert list(images) == ["word_attention"]
    readable(fig := images["word_attention"][0])
    ax = fig.axes[0]
    words = [text.get_text() for text in ax.texts]
    weights = ax.images[0].get_array()
    assert len(words) == weights.count() > 0, "one coloured cell per word"


def train(model, task, loader, steps: int, lr: float) -> tuple[float, float]:
    """Mean loss of the first and of the last five of ``steps`` Adam steps."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses, batches = [], iter(loader)
    for _ in range(steps):
        batch = next(batches, None) or next(batches := iter(loader))
        loss = task.step(model, batch, "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses[:5]) / 5, sum(losses[-5:]) / 5


def test_bahdanau_model_learns_dates():
    torch.manual_seed(0)
    data = DateNormalization(tokenizer="char", vocab_size=64, train_size=320, batch_size=16)
    data.setup("fit")
    data.resolve_tokenizer()
    first, last = train(RecurrentSeq2Seq(64, dim=32, embed_dim=16), Translation(), data.train_dataloader(), 25, 0.01)
    assert last < 0.6 * first


def test_self_attentive_model_learns_trec(shared_data):
    torch.manual_seed(0)
    data = TREC(root=str(shared_data("TREC")), vocab_size=2000, batch_size=32)
    data.setup("fit")
    data.resolve_tokenizer()
    model = SelfAttentiveClassifier(2000, 6, embed_dim=32, dim=32, attention_hidden=16, hidden=32)
    first, last = train(model, TextClassification(num_classes=6, penalty=0.1), data.train_dataloader(), 40, 0.01)
    assert last < 0.75 * first


def test_clear_errors_for_bad_task_and_run_values():
    data = GeneratedReviews(vocab_size=128, train_size=50)
    data.setup("fit")
    with pytest.raises(
        ValueError, match=r"model.vocab_size is 4 but the data has 128: set model.vocab_size=128 or more"
    ):
        TextClassification(num_classes=3).check(SelfAttentiveClassifier(4, 3), data)
    with pytest.raises(
        ValueError, match=r"task.num_classes=5 but GeneratedReviews has 3 classes \(negative, neutral, positive\)"
    ):
        TextClassification(num_classes=5).check(SelfAttentiveClassifier(128, 5), data)
    TextClassification(num_classes=3).check(SelfAttentiveClassifier(128, 3), data)
