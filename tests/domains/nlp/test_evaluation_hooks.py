"""The NLP domain's evaluation hooks: the dates' gold alignments (by hand), the text classifiers'
items (tokens: weights, erasure, vectors), the translation task's gold views and supervised attention,
and its items (source tokens: weights, decision, erasure, vectors; ``evaluate`` end to end on dates)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import torch

from domains.nlp import (
    HierarchicalAttentionNetwork,
    RecurrentSeq2Seq,
    SelfAttentiveClassifier,
    TextClassification,
    TransformerClassifier,
    TransformerSeq2Seq,
    Translation,
)
from domains.nlp.data.dates import AlignedCollator, DateNormalization, DatePair, gold_alignment, human_date_spans
from domains.nlp.data.tokenization import train_tokenizer


def test_the_gold_alignment_of_dates_by_hand():
    text, spans = human_date_spans(datetime.date(1998, 5, 9), "{day} {month} {yy}")
    assert text == "9 May 98" and spans == {"day": (0, 1), "month": (2, 5), "yy": (6, 8)}
    links = gold_alignment(datetime.date(1998, 5, 9), spans)  # "1998-05-09"
    assert links == (
        ((), (6, 7)),
        ((), (6, 7)),  # "19": derived from "98"
        ((6,), (6, 7)),
        ((7,), (6, 7)),  # "98": copied
        ((), ()),  # "-"
        ((), (2, 3, 4)),
        ((), (2, 3, 4)),  # "05": from "May"
        ((), ()),  # "-"
        ((), (0,)),
        ((0,), (0,)),
    )  # "09": a leading 0, then the copied 9
    text, spans = human_date_spans(datetime.date(2041, 9, 26), "{nth} of {month} {year}", lower=True)
    links = gold_alignment(datetime.date(2041, 9, 26), spans)
    assert text == "26th of september 2041"
    assert [sure for sure, _ in links[:4]] == [(18,), (19,), (20,), (21,)]
    assert links[8] == ((0,), (0, 1, 2, 3)) and links[9] == ((1,), (0, 1, 2, 3))


def test_batches_carry_the_alignment_of_target_and_source_tokens():
    tokenizer = train_tokenizer(["9 May 98", "1998-05-09"], "char", 64)
    text, spans = human_date_spans(datetime.date(1998, 5, 9), "{day} {month} {yy}")
    pair = DatePair(text, "1998-05-09", gold_alignment(datetime.date(1998, 5, 9), spans))
    batch = AlignedCollator(tokenizer, 64)([pair, pair])
    alignment = batch["alignment"]
    assert alignment.shape == (2, 11, 8)  # 10 characters and </s>, 8 source characters
    assert alignment[0, 2].tolist() == [0, 0, 0, 0, 0, 0, 2, 1] and alignment[0, 0].tolist() == [0] * 6 + [1, 1]
    assert alignment[0, 4].sum() == 0 and alignment[0, 10].sum() == 0  # "-" and </s>
    assert alignment[0, 9].tolist() == [2] + [0] * 7
    plain = AlignedCollator(tokenizer, 64)([("9 May 98", None)])
    assert "alignment" not in plain, "texts to predict have no alignment"


def _dates(size: int = 8):
    data = DateNormalization(
        train_size=64, val_size=8, test_size=size, tokenizer="char", vocab_size=64, batch_size=size
    )
    data.setup("test")
    return data, next(iter(data.test_dataloader()))


@pytest.mark.parametrize(
    "model",
    [
        RecurrentSeq2Seq(64, dim=32, attention="additive", style="bahdanau"),
        RecurrentSeq2Seq(64, dim=32, attention="general", style="luong"),
        TransformerSeq2Seq(64, dim=32, depth=2),
    ],
    ids=["bahdanau", "luong", "transformer"],
)
def test_translation_gold_views_and_supervised_attention(model):
    data, batch = _dates()
    task = Translation(attention_supervision=0.5)
    views = task.gold_views(model.eval(), batch)
    names = [view.name for view in views]
    if isinstance(model, TransformerSeq2Seq):
        per_layer = len(names) // 2  # every head and their mean, for each of the 2 decoder layers
        assert names[:2] == ["layer0/head0", "layer0/head1"] and names[per_layer - 1] == "layer0/mean"
        assert names[-1] == "layer1/mean" and len(names) == 2 * per_layer
    else:
        assert names == ["alignment"]
    view = views[0]
    assert view.weights.shape == batch["alignment"].shape and view.possible is not None
    assert torch.equal(view.queries, (batch["alignment"] >= 1).any(-1))
    step = task.step(model.train(), batch, "train")
    assert set(step.logs) == {"attention_loss"} and step.logs["attention_loss"] > 0
    step.loss.backward()
    attention = [p for n, p in model.named_parameters() if "attention" in n and p.grad is not None]
    assert attention and any(p.grad.abs().sum() > 0 for p in attention)
    task.check(model, data)


def test_supervised_attention_needs_data_with_gold_alignments():
    class NoGold:
        pass

    with pytest.raises(ValueError, match="task.attention_supervision=0.5 needs data with gold alignments"):
        Translation(attention_supervision=0.5).check(RecurrentSeq2Seq(64, dim=32), NoGold())
    with pytest.raises(ValueError, match="task.decouple_attention=1.0 needs data with gold alignments") as error:
        Translation(decouple_attention=1.0).check(RecurrentSeq2Seq(64, dim=32), NoGold())
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="task.random_attention=true draws the weights at random: it takes no"):
        Translation(attention_supervision=1.0, random_attention=True)
    with pytest.raises(ValueError, match="task.random_attention=true needs a model with attention"):
        Translation(random_attention=True).check(RecurrentSeq2Seq(64, dim=32, attention="none"), _dates()[0])


def test_the_translation_families_losses_by_hand():
    """Supervision adds lambda x CE of each output token's alignment against its sure links (its
    possible ones where it has none), decoupling mu x -log(1 - m), m the mass on all its links;
    a naive loop over the output tokens of a tiny batch gives both."""
    import math

    import torch.nn.functional as F

    from domains.nlp.data.tokenization import PAD
    from domains.nlp.models.seq2seq import teacher_inputs

    data, batch = _dates(4)
    torch.manual_seed(0)
    model = RecurrentSeq2Seq(64, dim=32, attention="general", style="luong").eval()
    with torch.no_grad():
        output = model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"]), need_weights=True)
    cross_entropy = float(F.cross_entropy(output.logits.transpose(1, 2), batch["target"], ignore_index=PAD))
    supervision, decoupling = [], []
    for b, rows in enumerate(batch["alignment"].tolist()):
        for m, links in enumerate(rows):
            weights = output.alignment[b, m].tolist()
            sure = [n for n, link in enumerate(links) if link == 2]
            possible = [n for n, link in enumerate(links) if link >= 1]
            if possible:
                gold = sure or possible
                supervision.append(-sum(math.log(weights[n]) for n in gold) / len(gold))
                decoupling.append(-math.log(1 - sum(weights[n] for n in possible) + 1e-6))
    supervision, decoupling = sum(supervision) / len(supervision), sum(decoupling) / len(decoupling)
    step = Translation(attention_supervision=0.5).step(model, batch, "train")
    assert step.loss.item() == pytest.approx(cross_entropy + 0.5 * supervision, rel=1e-5)
    assert float(step.logs["attention_loss"]) == pytest.approx(supervision, rel=1e-5)
    step = Translation(decouple_attention=2.0).step(model, batch, "train")
    assert set(step.logs) == {"decoupling_loss"}
    assert step.loss.item() == pytest.approx(cross_entropy + 2.0 * decoupling, rel=1e-5)
    assert Translation().step(model, batch, "train").loss.item() == pytest.approx(cross_entropy, rel=1e-6)


def test_random_translation_attention_draws_its_weights():
    data, batch = _dates(4)
    model, task = (
        RecurrentSeq2Seq(64, dim=32, attention="general", style="luong").eval(),
        Translation(random_attention=True),
    )
    task.check(model, data)
    assert {m.ablation for m in model.modules() if hasattr(m, "block_name")} == {"random"}
    (first,), (second,) = (task.gold_views(model, batch) for _ in range(2))
    assert torch.allclose(first.weights.sum(-1), torch.ones(1)) and not torch.allclose(first.weights, second.weights)


def _texts():
    tokens = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 0, 0]])
    return {"tokens": tokens, "mask": tokens.ne(0), "target": torch.tensor([0, 1])}


@pytest.mark.parametrize(
    "make",
    [
        lambda: SelfAttentiveClassifier(20, 3, embed_dim=8, dim=16, attention_hidden=8, hidden=16),
        lambda: TransformerClassifier(20, 3, dim=16, depth=2),
        lambda: TransformerClassifier(20, 3, dim=16, depth=2, readout="cls"),
    ],
    ids=["selfattentive", "transformer", "transformer_cls"],
)
def test_text_classifiers_weigh_their_tokens(make):
    model, task, batch = make().eval(), TextClassification(3), _texts()
    items = task.item_attention(model, batch)
    assert items.weights.shape == (2, 5) and torch.equal(items.valid, batch["mask"])
    assert torch.allclose(items.weights.sum(-1), torch.ones(2)) and not items.weights[~items.valid].any()
    assert items.blocks in (("attention",), ("pooling",), ("encoder.layers.1.attention",))
    erased = task.erase_items(batch, torch.tensor([[False, True, False, False, False], [True] + [False] * 4]))
    assert erased["tokens"].tolist() == [[5, 7, 8, 0, 0], [10, 11, 0, 0, 0]]
    forward = task.item_forward(model, batch)
    assert forward.vectors.shape == (2, 5, model.embed.embedding_dim)
    logits = task.decision(model, batch)
    assert torch.allclose(forward.forward(forward.vectors), logits, atol=1e-5)
    assert torch.allclose(forward.forward(torch.cat([forward.vectors] * 3)), logits.repeat(3, 1), atol=1e-5)


def test_han_items_are_the_words_of_all_sentences():
    model, task = (
        HierarchicalAttentionNetwork(20, 3, embed_dim=8, dim=16, attention_hidden=8).eval(),
        TextClassification(3),
    )
    tokens = torch.tensor([[[5, 6, 0], [7, 0, 0]], [[8, 9, 10], [0, 0, 0]]])
    batch = {"tokens": tokens, "mask": tokens.ne(0), "target": torch.tensor([0, 1])}
    items = task.item_attention(model, batch)
    assert items.weights.shape == (2, 6) and torch.allclose(items.weights.sum(-1), torch.ones(2))
    forward = task.item_forward(model, batch)
    assert forward.vectors.shape == (2, 6, 8)
    assert torch.allclose(forward.forward(forward.vectors), task.decision(model, batch), atol=1e-5)
    assert task.item_attention(SelfAttentiveClassifier(20, 3, attention="none"), _texts()) is None


@pytest.mark.slow
def test_supervised_attention_lowers_the_alignment_error_rate_on_dates():
    """One epoch of 1024 dates (32 steps) of a small Luong model: supervision takes the AER of
    its alignment from about 0.8 (unsupervised, still learning where to look) to about 0.1."""
    from framework.evaluation.measures import alignment_counts, hard_alignment

    data = DateNormalization(train_size=1024, val_size=8, test_size=128, tokenizer="char", vocab_size=64, batch_size=32)
    data.setup("fit")
    test = next(iter(data.loader("test")))
    found = {}
    for weight in (0.0, 1.0):
        torch.manual_seed(0)
        model, task = (
            RecurrentSeq2Seq(64, dim=64, embed_dim=16, attention="general", style="luong"),
            Translation(attention_supervision=weight),
        )
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.003)
        for batch in data.train_dataloader():
            optimizer.zero_grad()
            task.step(model, batch, "train").loss.backward()
            optimizer.step()
        with torch.no_grad():
            (view,) = task.gold_views(model.eval(), test)
        found[weight] = alignment_counts(
            hard_alignment(view.weights, view.keys.expand_as(view.weights)), view.gold, view.possible, view.queries
        ).aer
    assert found[1.0] < 0.35 and found[0.0] - found[1.0] > 0.3, found


TRANSLATORS = {
    "bahdanau": lambda: RecurrentSeq2Seq(64, dim=32, attention="additive", style="bahdanau"),
    "luong": lambda: RecurrentSeq2Seq(64, dim=32, attention="general", style="luong"),
    "transformer": lambda: TransformerSeq2Seq(64, dim=32, depth=2),
}


@pytest.mark.parametrize("name", list(TRANSLATORS))
def test_translation_items_are_the_source_tokens_weighed_by_the_mean_alignment(name):
    """The item attention is the alignment (the Transformer's last cross-attention layer, read
    here from the block itself, heads averaged) summed over the reference's tokens by a loop and
    renormalised over the valid source tokens."""
    from domains.nlp.data.tokenization import PAD
    from domains.nlp.models.seq2seq import teacher_inputs
    from framework.attention import capture

    torch.manual_seed(0)
    _, batch = _dates(4)
    batch["target"][0, -3:] = PAD  # a shorter reference: its last positions do not count
    model, task = TRANSLATORS[name]().eval(), Translation()
    with torch.no_grad():
        items = task.item_attention(model, batch)
    inputs = teacher_inputs(batch["target"])
    with torch.no_grad():
        if name == "transformer":
            with capture(model, "decoder.1.cross_attention") as maps:
                model(batch["tokens"], batch["mask"], inputs)
            alignment = maps["decoder.1.cross_attention"][0].weights.mean(1)
        else:
            alignment = model(batch["tokens"], batch["mask"], inputs, need_weights=True).alignment
    assert items.blocks == (("decoder.1.cross_attention",) if name == "transformer" else ("attention",))
    for b in range(len(alignment)):
        valid, reference = batch["mask"][b].tolist(), [t for t, token in enumerate(batch["target"][b]) if token != PAD]
        summed = [sum(alignment[b, t, n].item() for t in reference) * valid[n] for n in range(len(valid))]
        expected = torch.tensor([value / sum(summed) for value in summed])
        torch.testing.assert_close(items.weights[b], expected, atol=1e-6, rtol=1e-5)
    assert torch.equal(items.valid, batch["mask"].bool())
    assert task.item_attention(RecurrentSeq2Seq(64, dim=32, attention="none"), batch) is None


def test_the_translation_decision_is_whether_the_model_gives_the_reference():
    """softmax(decision) = (p, 1 - p), p the geometric mean of the reference tokens' probabilities
    under teacher forcing (by a loop); a saturated p keeps finite logits and gradients."""
    import math

    from domains.nlp.data.tokenization import PAD
    from domains.nlp.models.seq2seq import teacher_inputs
    from domains.nlp.tasks.translation import reference_decision

    torch.manual_seed(0)
    _, batch = _dates(4)
    batch["target"][1, -4:] = PAD
    model, task = RecurrentSeq2Seq(64, dim=32, attention="general", style="luong").eval(), Translation()
    with torch.no_grad():
        probabilities = model(batch["tokens"], batch["mask"], teacher_inputs(batch["target"])).softmax(-1)
        decision = task.decision(model, batch)
    for b, row in enumerate(batch["target"].tolist()):
        reference = [(t, token) for t, token in enumerate(row) if token != PAD]
        p = math.exp(sum(math.log(float(probabilities[b, t, token])) for t, token in reference) / len(reference))
        torch.testing.assert_close(decision[b].softmax(-1), torch.tensor([p, 1 - p]), atol=1e-6, rtol=1e-5)
    certain = torch.full((1, 3, 8), -50.0).scatter(-1, torch.tensor([[[2], [5], [3]]]), 50.0).requires_grad_()
    saturated = reference_decision(certain, torch.tensor([[2, 5, 3]]))
    assert saturated.isfinite().all() and saturated.softmax(-1)[0, 0] > 1 - 1e-5
    saturated.softmax(-1)[0, 0].backward()
    assert certain.grad.isfinite().all()


def test_the_tests_explain_the_reference_whatever_the_model_predicts():
    """An untrained model gives no reference (p < 1/2, "not the reference" predicted), yet ERASER
    and the attributions follow p: the class the tests explain is the reference's, 0."""
    torch.manual_seed(0)
    _, batch = _dates(4)
    model, task = RecurrentSeq2Seq(64, dim=32, attention="general", style="luong").eval(), Translation()
    with torch.no_grad():
        decision = task.decision(model, batch)
    assert decision.argmax(-1).eq(1).all(), "an untrained model predicts 'not the reference'"
    assert task.explained_class(decision).tolist() == [0, 0, 0, 0]


def test_erasing_source_tokens_leaves_the_target_alone():
    torch.manual_seed(0)
    _, batch = _dates(4)
    model, task = RecurrentSeq2Seq(64, dim=32, attention="general", style="luong").eval(), Translation()
    none = task.erase_items(batch, torch.zeros_like(batch["mask"]))
    with torch.no_grad():
        assert torch.equal(task.decision(model, none), task.decision(model, batch))
    erased = torch.zeros_like(batch["mask"])
    erased[0, [0, 2]] = erased[1, 1] = True
    cut = task.erase_items(batch, erased)
    tokens, length = batch["tokens"][0].tolist(), int(batch["mask"][0].sum())
    assert cut["tokens"][0].tolist() == [tokens[1]] + tokens[3:length] + [0] * (len(tokens) - length + 2)
    assert cut["mask"].sum(-1).tolist() == (batch["mask"].sum(-1) - torch.tensor([2, 1, 0, 0])).tolist()
    assert torch.equal(cut["tokens"][2:], batch["tokens"][2:])
    assert torch.equal(cut["target"], batch["target"]) and "alignment" not in cut, "the gold indexes the uncut source"
    with torch.no_grad():
        changed = (task.decision(model, cut) - task.decision(model, batch)).abs().sum(-1)
    assert (changed[:2] > 0).all() and (changed[2:] == 0).all()


@pytest.mark.parametrize("name", ["luong", "transformer"])
def test_the_source_embeddings_give_back_the_decision_and_leave_the_targets_alone(name):
    """Source and target share one embedding: the item vectors replace its source call alone. With
    the source cut to the target's length, vectors that also replaced the target's embedding
    would change the decision."""
    torch.manual_seed(0)
    _, batch = _dates(4)
    length = batch["target"].shape[1]
    batch = {**batch, "tokens": batch["tokens"][:, :length], "mask": batch["mask"][:, :length]}
    model, task = TRANSLATORS[name]().eval(), Translation()
    forward = task.item_forward(model, batch)
    assert torch.equal(forward.vectors, model.embed(batch["tokens"]))
    with torch.no_grad():
        decision, weights = task.decision(model, batch), task.item_attention(model, batch).weights
        torch.testing.assert_close(forward.forward(forward.vectors), decision)
        torch.testing.assert_close(forward.forward(torch.cat([forward.vectors] * 3)), decision.repeat(3, 1))
        torch.testing.assert_close(forward.attention(forward.vectors), weights)
        moved = forward.vectors.clone()
        moved[1, 0] += torch.randn(moved.shape[-1])  # not a constant, which the Transformer's layer norms remove
        changed = (forward.forward(moved) - decision).abs().sum(-1)
    assert changed[1] > 0 and (changed[[0, 2, 3]] == 0).all()


@pytest.mark.slow
def test_evaluate_measures_the_faithfulness_of_a_dates_model(tmp_path):
    """A tiny Luong model fitted one epoch on 64 dates, then ``evaluate`` with the faithfulness,
    ERASER and Captum tests: every row is measured, on the ``attention`` block."""
    import csv

    from framework.__main__ import main

    config = Path(__file__).resolve().parents[3] / "domains" / "nlp" / "seq2seq_luong.yaml"
    folder = tmp_path / "runs" / "dates" / "fit"
    small = [
        "--data.train_size=64",
        "--data.val_size=16",
        "--data.test_size=16",
        "--data.batch_size=16",
        "--model.dim=16",
        "--model.embed_dim=8",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        "--trainer.logger=false",
    ]
    fitted = main(["fit", "--config", str(config), *small, "--trainer.max_epochs=1", "--run_dir", str(folder)])
    best = fitted.trainer.checkpoint_callback.best_model_path
    main(
        [
            "evaluate",
            "--config",
            str(folder / "config.yaml"),
            "--ckpt_path",
            best,
            *small,
            "--examples=16",
            "--permutations=2",
            "--attribution_steps=2",
            "--perturb_samples=2",
            "--tests=[eraser, faithfulness, infidelity, sensitivity]",
        ]
    )
    (run,) = sorted(folder.parent.glob("*_evaluate"))
    with (run / "evaluation.csv").open(newline="") as handle:
        table = [row for row in csv.DictReader(handle) if row["test"] != "test"]
    assert {row["test"] for row in table} == {
        "permutation",
        "erasure",
        "attribution",
        "eraser",
        "infidelity",
        "sensitivity",
    }
    assert {row["block"] for row in table if row["test"] != "attribution" or "vs" not in row["block"]} == {"attention"}
    assert all(row["value"] for row in table), [row for row in table if not row["value"]]
    sensitivity = {row["setting"].split(",")[0] for row in table if row["test"] == "sensitivity"}
    assert {"attention", "gradient_x_input", "integrated_gradients", "leave_one_out"} <= sensitivity
