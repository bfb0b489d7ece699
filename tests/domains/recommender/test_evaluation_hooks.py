"""The recommender domain's evaluation hooks: the history's items as the items, the read-out
block's weights over them (SASRec's and BERT4Rec's predicting position, DIN's best candidate),
erasure that keeps the left padding, the embeddings as attribution inputs, and the evaluation
end to end on a trained SASRec run (``python -m framework evaluate``) and a trained DIN."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from domains.recommender import (
    DIN,
    BERT4Rec,
    GeneratedSequences,
    GRU4Rec,
    MaskedItemRanking,
    MostPopular,
    NextItemRanking,
    SASRec,
)
from framework.attention import capture
from framework.evaluation.faithfulness import faithfulness_rows
from tests.conftest import accelerator, on

CONFIGS = Path(__file__).resolve().parents[3] / "domains" / "recommender"
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false", "--trainer.logger=false"]
ITEMS = 60


@pytest.fixture(scope="module")
def batch():
    """A test batch of 8 users, histories of 12 columns: the first row left-padded by 5 columns,
    the first 2 columns padding in every row (which the models cut)."""
    data = GeneratedSequences(num_users=50, num_items=ITEMS, max_len=12, batch_size=8, num_negatives=10)
    data.setup("test")
    found = next(iter(data.test_dataloader()))
    history = found["history"].clone()
    history[0, :5] = 0
    history[:, :2] = 0
    return {**found, "history": history}


MODELS = {
    "sasrec": (lambda: SASRec(ITEMS, dim=16, max_len=12, dropout=0.0), NextItemRanking),
    "bert4rec": (lambda: BERT4Rec(ITEMS, dim=16, max_len=12, dropout=0.0), MaskedItemRanking),
    "din": (lambda: DIN(ITEMS, dim=16, hidden=(16,), chunk_size=16), NextItemRanking),
}


def expected_weights(model, history: torch.Tensor, candidate: torch.Tensor) -> torch.Tensor:
    """The read-out weights (B, N) computed another way: on the uncut history (the padding keys
    are masked, so cutting them changes nothing), straight from the blocks."""
    if isinstance(model, DIN):
        return (
            model.attention(
                model.items(candidate)[:, None], model.items(history), key_padding_mask=history > 0, need_weights=True
            )
            .weights[:, :, 0]
            .mean(1)
        )
    extra = int(isinstance(model, BERT4Rec))
    read = torch.cat([history[:, extra:], history.new_full((len(history), extra), ITEMS + 1)], 1)
    last = f"encoder.layers.{len(model.encoder.layers) - 1}.attention"
    with capture(model, last) as maps:
        model.encode(read)
    row = maps[last][0].weights.mean(1)[:, -1]  # the predicting position over the N columns it reads
    if not extra:
        return row
    items = torch.cat([torch.zeros_like(row[:, :1]), row[:, :-1]], 1)  # column j + 1 of the history, [mask] out
    return items / items.sum(-1, keepdim=True)


@pytest.mark.parametrize("protocol", ["full", "sampled"])
@pytest.mark.parametrize("name", list(MODELS))
def test_the_readout_weighs_the_history_items(name, protocol, batch, device):
    make, kind = MODELS[name]
    model, task = make().eval(), kind(protocol=protocol, num_negatives=10)
    model, batch = on(device, model, task.evaluation_batch(model, batch))
    history = batch["history"]
    with torch.no_grad():
        items = task.item_attention(model, batch)
        candidate = task.predicted_items(model, batch)
        scores = task.decision(model, batch)
        wanted = expected_weights(model, history, candidate)
    reads = (history > 0) & (torch.arange(12, device=device) >= int(name == "bert4rec"))
    assert items.weights.shape == (8, 12) and torch.equal(items.valid, reads)
    torch.testing.assert_close(items.weights.sum(-1), torch.ones(8, device=device))
    assert not items.weights[~items.valid].any()
    torch.testing.assert_close(items.weights, wanted * reads, atol=1e-5, rtol=1e-4)
    assert items.blocks == (("attention",) if name == "din" else ("encoder.layers.1.attention",))
    assert scores.shape == ((8, ITEMS + 1) if protocol == "full" else (8, 11))
    best = scores.argmax(-1)
    assert torch.equal(
        candidate, best if protocol == "full" else task.sampled_candidates(batch).gather(1, best[:, None])[:, 0]
    )


def test_bert4rec_never_reads_the_oldest_column_which_the_evaluation_batch_empties(batch):
    model, task = BERT4Rec(ITEMS, dim=16, max_len=12, dropout=0.0).eval(), MaskedItemRanking()
    full = batch["history"].clone()
    full[:, :2] = torch.arange(1, 17).view(8, 2)  # every column an item
    given = {**batch, "history": full}
    evaluated = task.evaluation_batch(model, given)
    assert not evaluated["history"][:, 0].any() and torch.equal(evaluated["history"][:, 1:], full[:, 1:])
    with torch.no_grad():
        torch.testing.assert_close(task.decision(model, evaluated), task.decision(model, given))
    sasrec = SASRec(ITEMS, dim=16, max_len=12)
    assert torch.equal(NextItemRanking().evaluation_batch(sasrec, given)["history"], full)
    with torch.no_grad():  # the ablation probe's and the rollout's pass is the test step's ranking
        torch.testing.assert_close(task.forward_pass(model, evaluated), task.step(model, given, "test").preds)


def test_erasing_removes_exactly_the_chosen_items_and_keeps_the_left_padding(device):
    history = torch.tensor([[0, 0, 5, 6, 7], [1, 2, 3, 4, 8]], device=device)
    erased = torch.tensor([[False, False, False, True, False], [True, False, False, False, True]], device=device)
    given = {"history": history, "seen": history.clone(), "target": torch.tensor([9, 9], device=device)}
    kept = NextItemRanking().erase_items(given, erased)
    assert kept["history"].tolist() == [[0, 0, 0, 5, 7], [0, 0, 2, 3, 4]]
    assert torch.equal(kept["seen"], given["seen"]), "the candidates stay the same"
    assert torch.equal(NextItemRanking().erase_items(given, torch.zeros_like(erased))["history"], history)


@pytest.mark.parametrize("protocol", ["full", "sampled"])
@pytest.mark.parametrize("name", list(MODELS))
def test_the_item_embeddings_give_back_the_decision(name, protocol, batch, device):
    make, kind = MODELS[name]
    model, task = make().eval(), kind(protocol=protocol, num_negatives=10)
    model, batch = on(device, model, task.evaluation_batch(model, batch))
    forward = task.item_forward(model, batch)
    with torch.no_grad():
        scores = task.decision(model, batch)
    assert forward.vectors.shape == (8, 12, 16) and task.item_layer(model) is model.items
    reads = (batch["history"] > 0) & (torch.arange(12, device=device) >= int(name == "bert4rec"))
    assert not forward.vectors[~reads].any() and forward.vectors[reads].abs().sum(-1).min() > 0
    finite = scores.isfinite()
    for times in (1, 3):
        with torch.no_grad():
            given = forward.forward(torch.cat([forward.vectors] * times))
        assert torch.equal(given.isfinite(), finite.repeat(times, 1))
        torch.testing.assert_close(given[finite.repeat(times, 1)], scores[finite].repeat(times), atol=1e-5, rtol=1e-4)
    moved = forward.vectors.clone()
    moved[reads] = 0.0  # the history's items, as zero vectors, change the scores
    with torch.no_grad():
        assert not torch.allclose(forward.forward(moved)[finite], scores[finite])


def test_models_without_attention_weigh_no_items(batch):
    task = NextItemRanking()
    counted = MostPopular(ITEMS)
    counted.count(batch["seen"])
    for model in (
        GRU4Rec(ITEMS, dim=16),
        counted,
        SASRec(ITEMS, dim=16, max_len=12, attention="none"),
        DIN(ITEMS, dim=16, attention="none"),
    ):
        assert task.item_attention(model.eval(), batch) is None
    (row,) = faithfulness_rows(GRU4Rec(ITEMS, dim=16).eval(), task, [batch])
    assert row.against == "n/a: the model weighs no input items"
    assert task.item_layer(counted) is None and task.item_forward(counted, batch) is None


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_evaluate_on_a_trained_sasrec_run(tmp_path, device):
    """sasrec.yaml on 300 generated users of 100 items, 4 epochs (val/ndcg@10 about 0.3), then
    ``evaluate``: every test of the table, on the read-out block, and the probe maps' statistics
    of both blocks."""
    from framework.__main__ import main

    folder = tmp_path / "runs" / "sasrec" / "fit"
    small = [
        "--data.num_users=300",
        "--data.num_items=100",
        "--data.max_len=20",
        "--data.batch_size=32",
        "--data.num_negatives=20",
        f"--trainer.accelerator={accelerator(device)}",
        *QUIET,
    ]
    fitted = main(
        [
            "fit",
            "--config",
            str(CONFIGS / "sasrec.yaml"),
            *small,
            "--trainer.max_epochs=4",
            "--optimizer.init_args.lr=0.01",
            "--run_dir",
            str(folder),
        ]
    )
    assert float(fitted.trainer.checkpoint_callback.best_model_score) > 0.15
    best = fitted.trainer.checkpoint_callback.best_model_path
    main(
        [
            "evaluate",
            "--config",
            str(folder / "config.yaml"),
            "--ckpt_path",
            best,
            *small,
            "--examples=64",
            "--permutations=2",
            "--attribution_steps=4",
            "--ablation_modes=[uniform,none]",
        ]
    )
    (run,) = sorted(folder.parent.glob("*_evaluate"))
    table = _table(run / "evaluation.csv")
    assert {row["test"] for row in table} == {
        "test",
        "ablation",
        "permutation",
        "erasure",
        "attribution",
        "intrinsic",
        "maps",
    }
    ratios = [row for row in table if row["test"] == "maps" and row["measure"] == "entropy_ratio"]
    assert {row["block"] for row in ratios} == {"encoder.layers.0.attention", "encoder.layers.1.attention"}
    assert all(0 < float(row["value"]) <= 1 for row in ratios)
    assert {row["block"] for row in table if row["test"] in ("permutation", "erasure")} == {
        "encoder.layers.1.attention"
    }
    ablations = {(row["block"], row["setting"]) for row in table if row["test"] == "ablation"}
    assert ablations == {
        (b, m) for b in ("encoder.layers.0.attention", "encoder.layers.1.attention", "all") for m in ("uniform", "none")
    }
    assert all(row["value"] for row in table if row["test"] in ("ablation", "permutation", "erasure"))
    taus = {row["setting"] for row in table if row["test"] == "attribution"}
    assert {"gradient_x_input", "integrated_gradients", "leave_one_out"} <= taus


@pytest.mark.slow
def test_a_trained_din_flips_more_decisions_when_its_top_item_is_erased(device):
    """DIN trained 4 epochs on 300 generated users: its best candidate's most attended history
    item decides it (measured: erasing it flips about 0.7 of the decisions, a random item 0.1)."""
    torch.manual_seed(0)
    data = GeneratedSequences(num_users=300, num_items=100, max_len=20, batch_size=32, num_negatives=20)
    data.setup("fit")
    model, task = on(device, DIN(100, dim=32, hidden=(32,))), NextItemRanking(loss="sampled_softmax", negatives=4)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(4):
        for rows in data.train_dataloader():
            optimizer.zero_grad()
            task.step(model, on(device, rows), "train").loss.backward()
            optimizer.step()
    model.eval()
    batches = [task.evaluation_batch(model, on(device, rows)) for rows in data.test_dataloader()][:4]
    rows = faithfulness_rows(model, task, batches, permutations=2, methods=())
    flips = next(row for row in rows if row.test == "erasure" and row.measure == "decision flips")
    assert flips.block == "attention" and flips.value > flips.baseline + 0.2, flips
    assert {row.test for row in rows} == {"permutation", "erasure"}
