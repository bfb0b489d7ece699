"""The training losses against their formulas on a tiny batch (padding positions left out),
the training negatives, and the models' scores at chosen positions."""

from __future__ import annotations

import math

import pytest
import torch

from domains.recommender import DIN, BERT4Rec, GRU4Rec, MaskedItemRanking, MostPopular, NextItemRanking, SASRec
from domains.recommender import task as task_module
from domains.recommender.losses import REDRAWS, sample_training_negatives
from domains.recommender.models.base import leading_padding

ROWS = torch.tensor(
    [
        [0, 0, 0, 5, 2, 7],  # three items: positions 3, 4 predict 2, 7
        [0, 4, 1, 3, 6, 2],
    ]
)  # five items: positions 1 .. 4 predict 1, 3, 6, 2


class Linear(torch.nn.Module):
    """s(position with item h, candidate c) = 0.3 c - 0.2 h: known scores, one parameter."""

    num_items = 8

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor(0.3))

    def forward(self, history, candidates=None, last=False, where=None):
        current = history[where].float().unsqueeze(1)
        if candidates is None:
            candidates = torch.arange(self.num_items + 1).expand(len(current), -1)
        return self.weight * candidates.float() - 0.2 * current


FIXED = torch.tensor([[1, 8], [3, 4], [2, 5], [8, 1], [4, 7], [6, 5]])  # two negatives for each of the 6 positions


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def positions():
    """(row, position, current item, next item) of every real position, written out."""
    return [(r, n, int(row[n]), int(row[n + 1])) for r, row in enumerate(ROWS) for n in range(5) if row[n] > 0]


@pytest.fixture
def fixed_negatives(monkeypatch):
    hits = torch.zeros(6, 2, dtype=torch.bool)
    hits[3, 1] = True  # as if item 1 had still hit the row after the redraws: left out

    def fixed(rows, owner, count, num_items):
        assert owner.tolist() == [0, 0, 1, 1, 1, 1] and count == 2 and num_items == 8
        return FIXED, hits

    monkeypatch.setattr(task_module.objectives, "sample_training_negatives", fixed)


def test_bce_is_the_papers_formula_at_real_positions_only(fixed_negatives):
    step = NextItemRanking(loss="bce", negatives=2).step(Linear(), {"sequence": ROWS}, "train")
    assert [p[:2] for p in positions()] == [(0, 3), (0, 4), (1, 1), (1, 2), (1, 3), (1, 4)]
    terms = []
    for m, (_, _, current, following) in enumerate(positions()):
        score = lambda item, current=current: 0.3 * item - 0.2 * current  # noqa: E731
        term = -math.log(sigmoid(score(following)))
        term -= sum(math.log(1 - sigmoid(score(int(j)))) for k, j in enumerate(FIXED[m]) if not (m == 3 and k == 1))
        terms.append(term)
    assert step.loss.item() == pytest.approx(sum(terms) / 6, rel=1e-6)
    assert step.target.tolist() == [0] * 6 and step.preds.shape == (6, 3) and step.preds[3, 2] == float("-inf")


def test_sampled_softmax_is_the_cross_entropy_among_target_and_negatives(fixed_negatives):
    step = NextItemRanking(loss="sampled_softmax", negatives=2).step(Linear(), {"sequence": ROWS}, "train")
    terms = []
    for m, (_, _, current, following) in enumerate(positions()):
        score = lambda item, current=current: 0.3 * item - 0.2 * current  # noqa: E731
        others = [int(j) for k, j in enumerate(FIXED[m]) if not (m == 3 and k == 1)]
        terms.append(-score(following) + math.log(sum(math.exp(score(i)) for i in [following, *others])))
    assert step.loss.item() == pytest.approx(sum(terms) / 6, rel=1e-6)


def test_full_softmax_covers_every_item_but_padding():
    step = NextItemRanking(loss="softmax").step(Linear(), {"sequence": ROWS}, "train")
    terms = []
    for _, _, current, following in positions():
        score = lambda item, current=current: 0.3 * item - 0.2 * current  # noqa: E731
        terms.append(-score(following) + math.log(sum(math.exp(score(i)) for i in range(1, 9))))
    assert step.loss.item() == pytest.approx(sum(terms) / 6, rel=1e-6)
    assert step.target.tolist() == [2, 7, 1, 3, 6, 2] and step.preds.shape == (6, 9)


def test_the_loss_reaches_the_parameters(fixed_negatives):
    model = Linear()
    NextItemRanking(loss="bce", negatives=2).step(model, {"sequence": ROWS}, "train").loss.backward()
    assert model.weight.grad is not None and model.weight.grad != 0


def test_masked_training_takes_the_same_losses_at_the_masked_positions():
    torch.manual_seed(0)
    bert = BERT4Rec(8, dim=8, max_len=5)
    for loss, columns in (("sampled_softmax", 4), ("bce", 4), ("softmax", 9)):
        step = MaskedItemRanking(mask_prob=0.5, loss=loss, negatives=3).step(bert, {"sequence": ROWS}, "train")
        assert step.preds.shape[1] == columns and step.loss > 0 and len(step.preds) <= 8


def test_training_negatives_avoid_the_row_and_are_uniform_otherwise():
    torch.manual_seed(0)
    rows = torch.tensor([[0, 0, 1, 2, 3], [4, 5, 6, 7, 8]])
    owner = torch.tensor([0] * 3000 + [1] * 3000)
    negatives, hits = sample_training_negatives(rows, owner, 2, 10)
    for user, items in ((0, {1, 2, 3}), (1, {4, 5, 6, 7, 8})):
        drawn, hit = negatives[owner == user].flatten(), hits[owner == user].flatten()
        assert all(int(item) in items for item in drawn[hit])  # a hit is a row item, and flagged
        kept = drawn[~hit]
        assert not set(kept.tolist()) & items
        share_of_hits = (len(items) / 10) ** (REDRAWS + 1)  # a hit after every redraw
        assert float(hit.float().mean()) == pytest.approx(share_of_hits, abs=0.01)
        allowed = sorted(set(range(1, 11)) - items)
        shares = torch.bincount(kept, minlength=11)[allowed].float() / len(kept)
        assert (shares - 1 / len(allowed)).abs().max() < 0.02  # uniform over the items outside the row


@pytest.mark.parametrize(
    "make",
    [
        lambda: SASRec(30, dim=16, max_len=8),
        lambda: BERT4Rec(30, dim=16, max_len=8),
        lambda: GRU4Rec(30, dim=16, hidden=12),
        lambda: DIN(30, dim=16, chunk_size=7),
        lambda: MostPopular(30),
    ],
)
def test_scores_at_chosen_positions_are_the_scores_at_every_position(make):
    torch.manual_seed(0)
    model = make().eval()
    history = torch.tensor([[0, 0, 0, 0, 3, 9, 4, 1], [0, 0, 0, 7, 7, 2, 5, 6], [0, 0, 0, 0, 0, 0, 12, 30]])
    where = history > 0
    assert leading_padding(history) == 3 and leading_padding(history, torch.ones_like(where)) == 0
    with torch.no_grad():
        every = model(history)
        torch.testing.assert_close(model(history, where=where), every[where])
        candidates = torch.randint(1, 31, (int(where.sum()), 4))
        torch.testing.assert_close(model(history, candidates, where=where), every[where].gather(1, candidates))
        if hasattr(model, "encode"):  # cutting the padding columns leaves the states of the items as they were
            states = model.encode(history)
            torch.testing.assert_close(model.score(states, None)[where], every[where])
