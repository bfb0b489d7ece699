"""Models: causality of SASRec, BERT4Rec's [mask], GRU4Rec's packing against a plain GRU,
DIN's per-position target attention, the popularity counts, block swaps and captured maps."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from domains.recommender import DIN, BERT4Rec, GRU4Rec, MostPopular, NextItemRanking, SASRec
from framework.attention import capture
from tests.conftest import on
from tests.image_logger import readable

NUM_ITEMS = 30


class PlainBlock(nn.Module):
    """A sequence block that knows nothing of causality (for the error test)."""

    def __init__(self, dim: int) -> None:
        super().__init__()

    def forward(self, x, mask=None):
        return x


def histories(batch: int = 4, length: int = 8, seed: int = 0) -> torch.Tensor:
    """Left-padded random histories with 2 .. length items."""
    g = torch.Generator().manual_seed(seed)
    items = torch.randint(1, NUM_ITEMS + 1, (batch, length), generator=g)
    lengths = torch.randint(2, length + 1, (batch,), generator=g)
    return items.masked_fill(torch.arange(length) < (length - lengths).unsqueeze(1), 0)


def test_sasrec_position_n_depends_on_items_up_to_n_only():
    model = SASRec(NUM_ITEMS, dim=16, max_len=8, dropout=0.0).eval()
    history = torch.randint(1, NUM_ITEMS + 1, (4, 8))  # no padding: every position is an item
    embeddings = (model.items(history) * 4).detach().requires_grad_()
    states = model.encoder(model.positions(embeddings), history > 0)
    (states[:, 3] * torch.randn(16)).sum().backward()  # a plain sum would vanish through the final layer norm
    assert embeddings.grad[:, 4:].abs().max() == 0 and embeddings.grad[:, :4].abs().sum(-1).min() > 0

    later = history.clone()
    later[:, 5:] = later[:, 5:] % NUM_ITEMS + 1
    with torch.no_grad():
        torch.testing.assert_close(model(history)[:, :5], model(later)[:, :5])


def test_scores_against_all_items_and_against_candidates_agree():
    history = histories()
    for model in (
        SASRec(NUM_ITEMS, dim=16, max_len=8),
        BERT4Rec(NUM_ITEMS, dim=16, max_len=8),
        GRU4Rec(NUM_ITEMS, dim=16, hidden=12),
        DIN(NUM_ITEMS, dim=16, chunk_size=7),
    ):
        model.eval()
        with torch.no_grad():
            every, last = model(history), model(history, last=True)
            candidates = torch.randint(1, NUM_ITEMS + 1, (4, 8, 5))
            assert every.shape == (4, 8, NUM_ITEMS + 1) and last.shape == (4, NUM_ITEMS + 1)
            torch.testing.assert_close(model(history, candidates), every.gather(2, candidates))
            torch.testing.assert_close(model(history, candidates[:, -1], last=True), last.gather(1, candidates[:, -1]))


def test_din_candidates_at_position_n_see_the_history_up_to_n():
    model = DIN(NUM_ITEMS, dim=16, chunk_size=5).eval()
    history = histories(length=6)
    with torch.no_grad():
        every = model(history)
        for n in range(6):
            prefix = torch.cat([torch.zeros(4, 5 - n, dtype=torch.long), history[:, : n + 1]], 1)
            real = history[:, n] > 0
            torch.testing.assert_close(every[real, n], model(prefix, last=True)[real])


def test_gru4rec_matches_a_plain_gru_on_the_unpadded_history():
    model = GRU4Rec(NUM_ITEMS, dim=8, hidden=6, dropout=0.0).eval()
    history = histories()
    with torch.no_grad():
        states = model.encode(history)
        for row, state in zip(history, states):
            items = row[row > 0]
            reference = model.out(model.gru(model.items(items).unsqueeze(0))[0][0])
            torch.testing.assert_close(state[-len(items) :], reference)


def test_bert4rec_reads_the_mask_appended_after_the_history():
    model = BERT4Rec(NUM_ITEMS, dim=16, max_len=8, dropout=0.0).eval()
    history = histories()
    appended = torch.cat([history[:, 1:], torch.full((4, 1), NUM_ITEMS + 1)], 1)
    with torch.no_grad():
        torch.testing.assert_close(model(history, last=True), model(appended)[:, -1])
    assert model.mask_token == NUM_ITEMS + 1


def test_most_popular_scores_are_training_counts():
    model = MostPopular(5)
    model.count(torch.tensor([[0, 1, 2, 2], [3, 2, 1, 2]]))
    assert model.counts.tolist() == [0, 2, 4, 1, 0, 0]
    scores = model(torch.ones(2, 3, dtype=torch.long), last=True)
    assert scores.shape == (2, 6) and scores[0].argsort(descending=True)[:3].tolist() == [2, 1, 3]
    model.count(torch.tensor([4, 4, 5]))  # counting again replaces the counts
    assert model.counts.tolist() == [0, 0, 0, 0, 2, 1]
    step = NextItemRanking().step(model, {"sequence": torch.tensor([[0, 4, 4, 5]])}, "train")
    step.loss.backward()  # a zero loss that reaches no parameter
    assert step.loss == 0 and model.counts.tolist() == [0, 0, 0, 0, 2, 1] and model.temperature.grad is None


def test_blocks_swap_and_a_block_without_causal_is_refused():
    assert type(SASRec(NUM_ITEMS, attention="local").encoder.layers[0].attention).__name__ == "LocalAttention"
    assert SASRec(NUM_ITEMS, attention="local").encoder.layers[0].attention.causal
    assert type(SASRec(NUM_ITEMS, attention="none").encoder.layers[0].attention).__name__ == "NoAttention"
    assert type(DIN(NUM_ITEMS, attention="none").attention).__name__ == "NoAttention"
    with pytest.raises(ValueError, match="cannot be causal .*blocks that can: adaptive_span, local"):
        SASRec(NUM_ITEMS, attention=f"{__name__}.PlainBlock")
    with pytest.raises(ValueError, match="this slot takes cross blocks"):
        DIN(NUM_ITEMS, attention="mhsa")


def test_item_ids_beyond_num_items_are_a_clear_error():
    with pytest.raises(ValueError, match="history holds item id 31 but model.num_items=30"):
        SASRec(NUM_ITEMS, max_len=8)(torch.tensor([[1, 31]]))


def test_captured_self_attention_maps_are_causal_over_the_history():
    model = SASRec(NUM_ITEMS, dim=16, depth=2, max_len=8).eval()
    history = histories()
    with torch.no_grad(), capture(model) as maps:
        model(history, last=True)
    assert sorted(maps) == ["encoder.layers.0.attention", "encoder.layers.1.attention"]
    weights = maps["encoder.layers.0.attention"][0].weights  # (B, h, N', N'): padding columns of every row cut
    longest = int((history > 0).sum(1).max())
    assert weights.shape == (4, 8, longest, longest)
    assert weights.triu(1).abs().max() == 0
    real = history[:, -longest:] > 0
    torch.testing.assert_close(
        weights.sum(-1)[real.unsqueeze(1).expand_as(weights[..., 0])], torch.ones(int(real.sum()) * 8)
    )
    assert weights[~real.unsqueeze(1).unsqueeze(-2).expand_as(weights)].abs().max() == 0  # padded keys


def test_the_task_draws_the_longest_history_attending_itself(device):
    history = histories()
    longest = int((history > 0).sum(1).max())
    batch = on(device, {"history": history})
    for model, expected in (
        (SASRec(NUM_ITEMS, dim=16, max_len=8), 2),  # causal blocks
        (DIN(NUM_ITEMS, dim=16), 1),  # the candidate of position n sees the items up to n
        (GRU4Rec(NUM_ITEMS, dim=8), 0),
    ):
        with torch.no_grad():
            pictures = NextItemRanking().images(on(device, model.eval()), batch)
        assert len(pictures) == expected and all(name.startswith("history_attention/") for name in pictures)
        for (fig,) in pictures.values():
            readable(fig)
            ax = fig.axes[0]
            items = [str(i) for i in history[int((history > 0).sum(1).argmax())][-longest:].tolist()]
            assert ax.images[0].get_array().shape == (longest, longest), "cut to the history's items"
            assert [label.get_text() for label in ax.get_xticklabels()] == items
            later = ~torch.ones(longest, longest, dtype=torch.bool).tril().numpy()
            assert (ax.images[0].get_array().mask == later).all(), "the later items hatched as masked, not as 0"
