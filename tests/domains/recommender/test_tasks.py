"""Tasks: history exclusion, the sampled protocol and its labels, the training objectives,
a loss that falls on real and generated data, and clear errors for bad settings."""

from __future__ import annotations

import lightning.pytorch as pl
import numpy as np
import pytest
import torch

from domains.recommender import (
    DIN,
    BERT4Rec,
    GeneratedSequences,
    MaskedItemRanking,
    MostPopular,
    MovieLens100K,
    NextItemRanking,
    SASRec,
    SequentialRanking,
)
from framework import TaskModule


class Fixed(torch.nn.Module):
    """Scores item i as i (a fixed model with a known ranking)."""

    num_items = 6

    def forward(self, history, candidates=None, last=False):
        every = torch.arange(7.0).expand(len(history), 7)
        return every if candidates is None else candidates.float()


def query(target: int, seen: list[int], negatives: list[int]) -> dict[str, torch.Tensor]:
    return {
        "history": torch.tensor([seen[-2:]]),
        "target": torch.tensor([target]),
        "seen": torch.tensor([seen]),
        "negatives": torch.tensor([negatives]),
        "user": torch.tensor([0]),
    }


def test_full_ranking_excludes_history_and_padding_but_never_the_target():
    batch = query(target=4, seen=[0, 6, 5, 4], negatives=[1, 2, 3])  # 4 was also seen: it stays a candidate
    scores, column = NextItemRanking().rank(Fixed(), batch)
    assert scores.tolist() == [[float("-inf"), 1, 2, 3, 4, float("-inf"), float("-inf")]] and column.tolist() == [4]
    step = NextItemRanking().step(Fixed(), batch, "test")
    metrics = NextItemRanking().metrics()
    metrics.update(step.preds, step.target)
    assert {k: float(v) for k, v in metrics.compute().items()} == {"hr@10": 1.0, "ndcg@10": 1.0, "mrr": 1.0}
    assert NextItemRanking(k=2).predict(Fixed(), batch).tolist() == [[3, 2]]  # recommendations skip all seen items


def test_sampled_protocol_ranks_target_among_negatives_and_labels_its_metrics():
    task = NextItemRanking(protocol="sampled", num_negatives=2)
    scores, column = task.rank(Fixed(), query(target=2, seen=[1, 2], negatives=[5, 1, 3]))
    assert scores.tolist() == [[2.0, 5.0, 1.0]] and column.tolist() == [0]
    assert sorted(task.metrics()) == ["hr@10_sampled2", "mrr_sampled2", "ndcg@10_sampled2"]
    assert (task.monitor, task.direction(task.monitor)) == ("val/ndcg@10_sampled2", "max")
    with pytest.raises(ValueError, match="task.num_negatives=5 but the data gives 3 negatives per user"):
        NextItemRanking(protocol="sampled", num_negatives=5).rank(Fixed(), query(2, [1, 2], [5, 1, 3]))


def test_training_metrics_are_named_for_the_candidates_the_loss_ranks():
    # SASRec's loss ranks the next item against one negative: HR@10 among 2 would be 1 whatever the model
    assert sorted(NextItemRanking().training_metrics()) == ["mrr_sampled1"]
    assert sorted(NextItemRanking(loss="sampled_softmax", negatives=9).training_metrics()) == ["mrr_sampled9"]
    assert sorted(NextItemRanking(loss="bce", negatives=10, k=5).training_metrics()) == [
        "hr@5_sampled10",
        "mrr_sampled10",
        "ndcg@5_sampled10",
    ]
    assert sorted(MaskedItemRanking().training_metrics()) == ["hr@10_all_items", "mrr_all_items", "ndcg@10_all_items"]
    module = TaskModule(SASRec(20, dim=8, max_len=6), NextItemRanking())
    assert list(module.train_metrics.keys()) == ["train/mrr_sampled1"]
    assert sorted(module.val_metrics.keys()) == ["val/hr@10", "val/mrr", "val/ndcg@10"]  # what configs monitor
    counted = MostPopular(20)
    counted.count(torch.tensor([[1, 2, 2, 3, 3, 3]]))
    step = NextItemRanking(negatives=3).step(counted, {"sequence": torch.tensor([[0, 1, 2, 3], [0, 0, 3, 2]])}, "train")
    assert step.preds.shape == (3, 4) and float(step.loss) == 0.0  # 3 real positions: the next item and 3 negatives
    assert step.preds[:, 0].tolist() == pytest.approx(torch.log1p(torch.tensor([2.0, 3, 2])).tolist(), rel=1e-4)


def test_next_item_training_targets_are_the_items_after_real_positions():
    model = SASRec(6, dim=8, max_len=4)
    rows = {"sequence": torch.tensor([[0, 0, 3, 1, 2], [5, 4, 3, 2, 1]])}
    step = NextItemRanking(loss="softmax").step(model, rows, "train")
    # the first item of a short row is no target: no item comes before it
    assert step.target.tolist() == [1, 2, 4, 3, 2, 1] and step.preds.shape == (6, 7)
    assert torch.isinf(step.preds[:, 0]).all()
    sampled = NextItemRanking(loss="sampled_softmax", negatives=3).step(model, rows, "train")
    assert sampled.preds.shape == (6, 4) and sampled.target.tolist() == [0] * 6
    paper = NextItemRanking().step(model, rows, "train")  # the default: SASRec's BCE, one negative
    assert paper.preds.shape == (6, 2) and paper.loss > 0


def test_masked_item_training_predicts_the_masked_items():
    torch.manual_seed(0)
    model = BERT4Rec(20, dim=8, max_len=6)
    sequence = torch.tensor([[0, 0, 0, 3, 1, 2, 7], [9, 8, 7, 6, 5, 4, 3]])
    step = MaskedItemRanking(mask_prob=0.5).step(model, {"sequence": sequence}, "train")
    assert 1 <= len(step.target) <= 9 and set(step.target.tolist()) <= {3, 1, 2, 7, 8, 6, 5, 4}
    with pytest.raises(TypeError, match="MaskedItemRanking needs a model with a \\[mask\\] token"):
        MaskedItemRanking().step(SASRec(20, max_len=6), {"sequence": sequence}, "train")


def test_a_sampled_loss_without_negatives_names_the_keys():
    """The values outside their domains are refused while parsing (tests/domains/recommender/test_cli.py)."""
    with pytest.raises(ValueError, match="task.negatives must be at least 1 for task.loss=bce"):
        NextItemRanking(negatives=0)
    with pytest.raises(ValueError, match="task.negatives must be at least 1 for task.loss=sampled_softmax"):
        MaskedItemRanking(loss="sampled_softmax", negatives=0)
    assert MaskedItemRanking(loss="softmax", negatives=0).negatives == 0  # the softmax scores every item


def losses(model, task, data, steps: int) -> list[float]:
    data.setup("fit")
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    batch, values = next(iter(data.train_dataloader())), []
    for _ in range(steps):
        loss = task.step(model, batch, "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        values.append(loss.item())
    return values


def test_sasrec_loss_falls_on_movielens(shared_data):
    shared_data("MovieLens100K")
    torch.manual_seed(0)
    data = MovieLens100K(max_len=10, batch_size=32)
    values = losses(SASRec(1349, dim=16, max_len=10), NextItemRanking(loss="softmax"), data, steps=10)
    assert values[-1] < values[0] - 0.3


def test_the_default_loss_falls_on_generated_histories():
    torch.manual_seed(0)
    data = GeneratedSequences(num_users=300, num_items=100, max_len=20, batch_size=64)
    values = losses(SASRec(100, dim=16, max_len=20), NextItemRanking(), data, steps=40)
    assert NextItemRanking().loss == "bce" and values[0] > 1.2  # about 2 log 2 at the start
    assert np.mean(values[-5:]) < np.mean(values[:5]) - 0.25


def test_din_loss_falls_on_generated_histories():
    torch.manual_seed(0)
    data = GeneratedSequences(
        num_users=200, num_items=60, min_length=5, max_length=15, max_len=15, batch_size=32, num_negatives=20
    )
    values = losses(DIN(60, dim=16), NextItemRanking(loss="sampled_softmax", negatives=4), data, steps=15)
    assert values[-1] < values[0] - 0.2


def test_popularity_counts_every_training_interaction_without_gradient_steps():
    data = GeneratedSequences(num_users=300, num_items=60, max_len=5, num_negatives=20)  # rows hold 6 items only
    model, task = MostPopular(60), NextItemRanking()
    module = TaskModule(model, task)
    module.configure_optimizers = lambda: torch.optim.SGD(module.parameters(), lr=1.0, weight_decay=0.5)
    before = model.temperature.detach().clone()
    pl.Trainer(
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    ).fit(module, datamodule=data)
    expected = torch.bincount(data.train_items, minlength=61).float()
    assert data.train_items.numel() > 300 * 6  # more than the rows hold
    assert torch.equal(model.counts, expected) and model.counts[0] == 0  # counted once, not once per epoch
    assert torch.equal(model.temperature, before) and model.temperature.grad is None  # no gradient, no step
    metrics = task.metrics()
    for batch in data.val_dataloader():
        step = task.step(model, batch, "val")
        metrics.update(step.preds, step.target)
    assert float(metrics.compute()["hr@10"]) > 0.15  # the 10 most popular of 60 Zipf items


def test_a_popularity_model_that_was_never_counted_says_so():
    with pytest.raises(RuntimeError, match="MostPopular has no counts"):
        NextItemRanking().step(MostPopular(5), {"sequence": torch.tensor([[0, 1, 2]])}, "train")


def test_base_task_needs_a_training_objective():
    with pytest.raises(TypeError, match="must define train_step"):
        SequentialRanking().step(Fixed(), {}, "train")


def test_the_metric_collection_keeps_metrics_apart_after_a_batch_without_hits():
    # torchmetrics merges metrics whose states match after one batch unless told not to
    metrics = NextItemRanking().metrics()
    metrics.update(torch.tensor([[0.0, 1.0, 2.0]] * 2).repeat(1, 5), torch.tensor([0, 0]))  # rank 14: no hit
    metrics.update(torch.tensor([[3.0, 1.0, 2.0, 5.0, 4.0, 6.0]]), torch.tensor([0]))  # rank 3
    values = {k: float(v) for k, v in metrics.compute().items()}
    assert values["hr@10"] == pytest.approx(1 / 3) and values["ndcg@10"] == pytest.approx(1 / 3 / 2.321928, rel=1e-5)
