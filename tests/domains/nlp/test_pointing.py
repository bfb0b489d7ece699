"""Pointing in the NLP domain: number sorting, the pointer network and its task; the copy mechanism
and the alignment blocks (location-aware, monotonic, GRU-gated, area) in the recurrent seq2seq."""

from __future__ import annotations

import pytest
import torch

from domains.nlp.data import DateNormalization, NumberSorting
from domains.nlp.data.sorting import IGNORE
from domains.nlp.data.tokenization import PAD
from domains.nlp.models import PointerNetwork, RecurrentSeq2Seq, teacher_inputs
from domains.nlp.tasks import Ordering, Translation


def sorting_batch(size: int = 8, seed: int = 0):
    data = NumberSorting(
        train_size=size, val_size=0, test_size=0, min_length=3, max_length=6, seed=seed, batch_size=size
    )
    return next(iter(data.loader("train")))


def test_sorting_targets_sort_the_real_numbers_and_are_reproducible():
    batch = sorting_batch()
    for values, mask, target in zip(batch["values"], batch["mask"], batch["target"]):
        length = int(mask.sum())
        assert mask[:length].all() and not mask[length:].any() and 3 <= length <= 6
        assert (target[length:] == IGNORE).all() and sorted(target[:length].tolist()) == list(range(length))
        ordered = values[target[:length]]
        assert (ordered[1:] >= ordered[:-1]).all()
    assert torch.equal(sorting_batch()["values"], batch["values"])
    assert not torch.equal(sorting_batch(seed=1)["values"], batch["values"])


@pytest.mark.parametrize("exclude", [False, True])
def test_the_pointer_network_points_over_the_positions_of_each_list(exclude):
    torch.manual_seed(0)
    model = PointerNetwork(dim=16, embed_dim=8, exclude_chosen=exclude).eval()
    batch = sorting_batch()
    out = model(batch["values"], batch["mask"], batch["target"], need_weights=True)
    assert out.log_probs.shape == (8, 6, 6)
    lengths = batch["mask"].sum(-1)
    for e in range(8):  # a distribution over the real positions at every real step
        n = int(lengths[e])
        torch.testing.assert_close(out.weights[e, :n, :n].sum(-1), torch.ones(n))
        assert torch.isinf(out.log_probs[e, :, n:]).all()
        if exclude:  # step i may not point where the target pointed before
            for i in range(1, n):
                assert torch.isinf(out.log_probs[e, i, batch["target"][e, :i]]).all()
    positions = model.point(batch["values"], batch["mask"])
    assert ((positions == IGNORE) == (batch["target"] == IGNORE)).all()
    if exclude:
        for e in range(8):
            n = int(lengths[e])
            assert sorted(positions[e, :n].tolist()) == list(range(n))


def test_greedy_pointing_replays_the_teacher_forced_distribution():
    """Fed its own choices, the decoder gives the same distributions as under teacher forcing."""
    torch.manual_seed(0)
    model = PointerNetwork(dim=16, embed_dim=8).eval()
    batch = sorting_batch()
    positions = model.point(batch["values"], batch["mask"])
    log_p = model(batch["values"], batch["mask"], positions)
    real = positions != IGNORE
    assert torch.equal(log_p.argmax(-1)[real], positions[real])


def test_the_pointer_network_learns_to_sort_and_the_task_decodes():
    torch.manual_seed(0)
    data = NumberSorting(train_size=512, val_size=64, test_size=0, min_length=3, max_length=5, batch_size=32)
    model, task = PointerNetwork(dim=32, embed_dim=16), Ordering(max_length=5)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    losses = []
    for _ in range(3):
        for batch in data.loader("train", shuffle=True):
            loss = task.step(model, batch, "train").loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    assert sum(losses[-5:]) < 0.5 * sum(losses[:5]), losses
    model.eval()
    metrics = task.generation_metrics()
    with torch.no_grad():
        for batch in data.loader("val"):
            metrics.update(*task.decode(model, batch))
    logs = {name: value.item() for name, value in metrics.compute().items()}
    assert logs["position_acc"] > 0.5 and 0 <= logs["sequence_acc"] <= logs["position_acc"]
    with pytest.raises(ValueError, match="task.max_length is 5 but data.max_length is 10"):
        task.check(model, NumberSorting())


def test_ordering_metrics_count_positions_and_whole_lists():
    metrics = Ordering(max_length=4).generation_metrics()
    predicted = torch.tensor([[1, 0, 2, IGNORE], [2, 1, 0, 3]])
    target = torch.tensor([[1, 0, 2, IGNORE], [2, 0, 1, 3]])
    metrics.update(predicted, target)
    assert metrics["position_acc"].compute().item() == pytest.approx(5 / 7)
    assert metrics["sequence_acc"].compute().item() == pytest.approx(1 / 2)


# --- the recurrent seq2seq with copying and alignment blocks ---------------------------------

V, D, E = 12, 16, 8


def tokens_and_mask():
    tokens = torch.randint(4, V, (3, 6))
    mask = torch.arange(6)[None] < torch.tensor([6, 4, 2])[:, None]
    return tokens.masked_fill(~mask, PAD), mask


@pytest.mark.parametrize("style", ["bahdanau", "luong"])
@pytest.mark.parametrize("attention", ["location_aware", "mocha", "gru_gated", "area", "monotonic_multi_head"])
def test_alignment_blocks_decode_step_by_step_as_under_teacher_forcing(style, attention):
    """Blocks whose alignment carries over steps keep it in the decoding state: the logits of
    step-by-step decoding are the teacher-forced ones."""
    torch.manual_seed(0)
    model = RecurrentSeq2Seq(V, dim=D, embed_dim=E, attention=attention, style=style).eval()
    tokens, mask = tokens_and_mask()
    target_in = teacher_inputs(torch.randint(4, V, (3, 5)))
    full = model(tokens, mask, target_in, need_weights=True)
    assert full.alignment.shape == (3, 5, 6) and not full.alignment[1, :, 4:].any()
    state, steps = model.start(tokens, mask), []
    for t in range(5):
        logits, state = model.step(state, target_in[:, t])
        steps.append(logits)
    torch.testing.assert_close(torch.stack(steps, 1), full.logits, atol=1e-5, rtol=1e-5)


def test_the_copy_mechanism_mixes_generating_and_copying():
    torch.manual_seed(0)
    model = RecurrentSeq2Seq(V, dim=D, embed_dim=E, copy=True).eval()
    tokens, mask = tokens_and_mask()
    target_in = teacher_inputs(torch.randint(4, V, (3, 5)))
    out = model(tokens, mask, target_in, need_weights=True)
    torch.testing.assert_close(out.logits.exp().sum(-1), torch.ones(3, 5), atol=1e-5, rtol=1e-5)  # log-probabilities
    with torch.no_grad():
        model.copy.gate.bias.fill_(-30.0)  # p_gen ~ 0: the output is the attention, summed per source token
    copied = model(tokens, mask, target_in, need_weights=True)
    expected = torch.zeros(3, 5, V).scatter_add(-1, tokens[:, None].expand(3, 5, 6), copied.alignment)
    torch.testing.assert_close(copied.logits.exp(), expected, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="model.copy needs attention weights over the source tokens"):
        RecurrentSeq2Seq(V, dim=D, attention="none", copy=True)


def test_the_copy_model_learns_dates():
    torch.manual_seed(0)
    data = DateNormalization(tokenizer="char", vocab_size=64, train_size=320, batch_size=16)
    data.setup("fit")
    data.resolve_tokenizer()
    model, task = RecurrentSeq2Seq(64, dim=32, embed_dim=16, copy=True), Translation()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    losses = []
    for batch in list(data.train_dataloader())[:20]:
        loss = task.step(model, batch, "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert sum(losses[-5:]) < 0.6 * sum(losses[:5]), losses
