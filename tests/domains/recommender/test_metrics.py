"""HR@k, NDCG@k and MRR against a naive formula (ties, exclusions) and torchmetrics' retrieval metrics."""

from __future__ import annotations

import math

import pytest
import torch
from torchmetrics.retrieval import RetrievalHitRate, RetrievalMRR, RetrievalNormalizedDCG

from domains.recommender.metrics import MRR, NDCG, HitRate, target_rank


def naive_rank(scores: list[float], column: int) -> int:
    """Position of the target in a descending sort that puts it after every equal score."""
    order = sorted(range(len(scores)), key=lambda c: (-scores[c], c == column))
    return order.index(column)


def naive_metrics(scores: torch.Tensor, columns: torch.Tensor, k: int) -> dict[str, float]:
    ranks = [naive_rank(row.tolist(), int(c)) for row, c in zip(scores, columns)]
    return {
        "hr": sum(r < k for r in ranks) / len(ranks),
        "ndcg": sum(1 / math.log2(r + 2) for r in ranks if r < k) / len(ranks),
        "mrr": sum(1 / (r + 1) for r in ranks) / len(ranks),
    }


def compute(scores: torch.Tensor, columns: torch.Tensor, k: int) -> dict[str, float]:
    out = {}
    for name, metric in (("hr", HitRate(k)), ("ndcg", NDCG(k)), ("mrr", MRR())):
        for part in range(0, len(scores), 7):  # several updates accumulate
            metric.update(scores[part : part + 7], columns[part : part + 7])
        out[name] = float(metric.compute())
    return out


@pytest.mark.parametrize("k", [1, 3, 10])
def test_metrics_match_the_naive_formula_with_ties_and_excluded_items(k):
    g = torch.Generator().manual_seed(k)
    scores = torch.randint(0, 5, (40, 12), generator=g).float()  # many ties
    scores[torch.rand(40, 12, generator=g) < 0.2] = float("-inf")  # excluded candidates
    columns = torch.randint(0, 12, (40,), generator=g)
    scores[torch.arange(40), columns] = torch.randint(0, 5, (40,), generator=g).float()  # the target stays finite
    expected, got = naive_metrics(scores, columns, k), compute(scores, columns, k)
    for name in expected:
        assert got[name] == pytest.approx(expected[name], abs=1e-6), name


def test_metrics_match_torchmetrics_retrieval_without_ties():
    g = torch.Generator().manual_seed(0)
    scores = torch.rand(30, 20, generator=g) + 0.01  # positive: RetrievalMRR ignores targets scored <= 0
    columns = torch.randint(0, 20, (30,), generator=g)
    relevant = torch.zeros(30, 20, dtype=torch.bool)
    relevant[torch.arange(30), columns] = True
    indexes = torch.arange(30).unsqueeze(1).expand(30, 20)
    reference = {
        "hr": RetrievalHitRate(top_k=10),
        "ndcg": RetrievalNormalizedDCG(top_k=10),
        "mrr": RetrievalMRR(),
    }
    got = compute(scores, columns, 10)
    for name, metric in reference.items():
        expected = float(metric(scores.flatten(), relevant.flatten(), indexes.flatten()))
        assert got[name] == pytest.approx(expected, abs=1e-6)


def test_a_constant_model_ranks_every_target_last():
    scores, columns = torch.zeros(4, 50), torch.tensor([0, 7, 20, 49])
    assert target_rank(scores, columns).tolist() == [49] * 4
    assert compute(scores, columns, 10)["hr"] == 0.0


def test_a_perfect_model_scores_one():
    scores = torch.randn(8, 30)
    columns = scores.argmax(1)
    assert compute(scores, columns, 1) == {"hr": 1.0, "ndcg": 1.0, "mrr": 1.0}


def test_wrong_shapes_are_named():
    with pytest.raises(ValueError, match=r"scores must be \(B, C\) and target \(B,\)"):
        target_rank(torch.zeros(4, 5, 6), torch.zeros(4, dtype=torch.long))
