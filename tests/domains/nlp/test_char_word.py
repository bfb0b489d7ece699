"""The words-and-characters classifier: the characters of a batch, hashed n-grams, its read-outs
(capsules, attention-via-attention, pooling) over meta-embeddings, and capsule training."""

from __future__ import annotations

import pytest
import torch

from domains.nlp import CapsuleClassification, CharacterWordClassifier, GeneratedReviews, TextClassification
from domains.nlp.data.classification import ClassificationCollator
from domains.nlp.data.tokenization import CHARACTER_VOCAB, train_tokenizer
from domains.nlp.models.char_word import BEGIN, END, CapsuleOutput, character_ngrams
from tests.learning import training_losses


def test_batches_carry_the_bytes_of_every_token():
    tokenizer = train_tokenizer(["Hello world", "ok"], "word", vocab_size=50, lowercase=True)
    batch = ClassificationCollator(tokenizer, max_length=8, characters=3, lowercase=True)([("Hello Zebra", 1), ("", 0)])
    assert batch["chars"].shape == (2, 2, 3)
    assert batch["chars"][0, 0].tolist() == [ord("h") + 1, ord("e") + 1, ord("l") + 1]  # cut at 3, lower-cased
    assert batch["chars"][0, 1].tolist() == [
        ord("z") + 1,
        ord("e") + 1,
        ord("b") + 1,
    ]  # an unknown word keeps its spelling
    assert not batch["chars"][1].any()  # the <unk> of an empty text has no characters
    with pytest.raises(ValueError, match="data.characters must be 0 with data.sentences=true"):
        GeneratedReviews(characters=4, sentences=True)


def test_character_ngrams_are_the_windows_of_the_marked_word():
    chars = torch.tensor([[[11, 12, 0, 0], [0, 0, 0, 0]]])  # "ab" and a padding word
    ids, valid = character_ngrams(chars, 3, buckets=10**9)
    base = CHARACTER_VOCAB + 2
    hashes = [(a * base + b) * base + c for a, b, c in ((BEGIN, 11, 12), (11, 12, END))]
    assert valid[0, 0].tolist() == [True, True, False, False] and not valid[0, 1].any()
    assert ids[0, 0, :2].tolist() == hashes
    small, _ = character_ngrams(chars, 3, buckets=7)
    assert small[0, 0, :2].tolist() == [h % 7 for h in hashes] and int(small.max()) < 7


def _reviews(**kwargs):
    data = GeneratedReviews(train_size=64, val_size=8, test_size=8, batch_size=32, characters=12, **kwargs)
    data.setup("fit")
    return data, next(iter(data.train_dataloader()))


def _loss_falls(model, task, batch, steps=25, lr=0.01):
    torch.manual_seed(0)
    losses = training_losses(model, task, [batch], steps, lr)
    return losses[0], losses[-1]


@pytest.mark.parametrize(
    "attention, embeddings, combine",
    [
        ("attention_via_attention", ["word"], "meta_embedding"),
        ("pooling", ["word", "ngrams"], "meta_embedding"),
        ("none", ["word", "ngrams"], "concat"),
    ],
)
def test_classifiers_learn_and_say_where_they_looked(attention, embeddings, combine):
    torch.manual_seed(0)
    data, batch = _reviews()
    model = CharacterWordClassifier(
        data.vocab_size,
        3,
        embed_dim=16,
        dim=16,
        embeddings=embeddings,
        combine=combine,
        attention=attention,
        char_dim=8,
        score_kwargs={"hidden": 8},
        dropout=0.0,
    )
    first, last = _loss_falls(model, TextClassification(3), batch)
    assert last < 0.5 * first
    output = model(batch["tokens"], batch["mask"], batch["chars"], need_weights=True)
    assert output.token_weights.shape == batch["tokens"].shape
    torch.testing.assert_close(output.token_weights.sum(-1), torch.ones(len(batch["tokens"])))
    assert not output.token_weights[~batch["mask"]].any()


def test_deep_alignment_scores_attention_via_attention():
    model = CharacterWordClassifier(
        100,
        2,
        embed_dim=8,
        dim=8,
        embeddings=["word"],
        attention="attention_via_attention",
        char_dim=4,
        score="deep",
        score_kwargs={"hidden": 6, "layers": 3},
    )
    assert type(model.attention.words.score).__name__ == "DeepScore" and model.attention.characters.score.layers == 3


def test_capsules_learn_with_their_joint_loss_and_predict_the_likeliest_capsule():
    torch.manual_seed(0)
    data, batch = _reviews()
    model = CharacterWordClassifier(data.vocab_size, 3, embed_dim=16, dim=16, attention="capsule", dropout=0.0)
    task = CapsuleClassification(3)
    task.check(model, data)
    step = task.step(model, batch, "train")
    assert set(step.logs) == {"probability_loss", "reconstruction_loss"}
    assert step.preds.shape == (len(batch["tokens"]), 3) and ((step.preds > 0) & (step.preds < 1)).all()
    torch.testing.assert_close(step.preds, model(batch["tokens"], batch["mask"], batch["chars"]))
    first, last = _loss_falls(model, task, batch)
    assert last < 0.8 * first


def test_the_capsule_probability_loss_is_binary_cross_entropy_also_under_mixed_precision(device):
    probabilities = torch.tensor([[0.9, 0.2, 0.4], [0.3, 0.6, 0.1]], device=device)
    output = CapsuleOutput(probabilities, torch.zeros(2, 3, 4, device=device), torch.zeros(2, 4, device=device))
    target = torch.tensor([0, 1], device=device)
    expected = -(torch.log(torch.tensor([0.9, 0.8, 0.6, 0.7, 0.6, 0.9]))).mean()
    with torch.autocast(device, dtype=torch.bfloat16):  # the GPU preset's bf16-mixed: CUDA refuses a bare BCE
        loss, logs = CapsuleClassification(3, reconstruction=0.0).losses(output, target)
    torch.testing.assert_close(loss.cpu(), expected)
    torch.testing.assert_close(logs["probability_loss"].cpu(), expected)


def test_wrong_inputs_and_settings_are_named():
    data, batch = _reviews()
    model = CharacterWordClassifier(data.vocab_size, 3, embed_dim=8, dim=8, attention="pooling")
    with pytest.raises(ValueError, match=r"read the characters of the tokens, chars \(B, N, C\).*set data.characters"):
        model(batch["tokens"], batch["mask"])
    with pytest.raises(ValueError, match="CapsuleClassification trains capsules"):
        CapsuleClassification(3).check(model, data)
    with pytest.raises(ValueError, match="model.embeddings must be distinct names"):
        CharacterWordClassifier(100, 2, embeddings=["word", "word"])
