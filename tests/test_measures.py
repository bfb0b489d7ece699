"""The standard measures of ``evaluate`` (ERASER, plausibility, Captum's infidelity and
sensitivity, PyG's graph fidelity) and the attention-training families: each measure against
hand-computed values on tiny inputs, the library ones against a naive formula or the library
called directly, and the tests end to end on a trained demo."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Optional

import pytest
import torch
from torch import Tensor, nn

from framework.errors import ConfigError
from framework.evaluation.captum_metrics import (
    DROP,
    attention_explanation,
    gated_probabilities,
    infidelities,
    interleaved,
    sensitivities,
    tiled,
)
from framework.evaluation.eraser import eraser_rows, probability_drop, random_like, ranks, rationale_size, top_fraction
from framework.evaluation.graph_fidelity import explainer, fidelities, graph_fidelity_rows, top_edges
from framework.evaluation.plausibility import auprc, hard_rationale, iou, plausibility_rows, token_f1
from framework.evaluation.protocol import EvaluationHooks, ItemAttention, ItemForward, replaying
from framework.tasks.attention_training import (
    AttentionTraining,
    attention_decoupling_loss,
    attention_supervision_loss,
    randomise_attention,
)

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false", "--trainer.logger=false"]


# ------------------------------------------------------------------ a task whose decision is known in closed form


class Weighted(nn.Module):
    """logits = [sum_i a_i x_i, 0]: the items' values x (B, N) weighed by a fixed attention a (B, N)
    (x of S copies of the batch, one batch after the other, weighed alike)."""

    def __init__(self, attention: Tensor) -> None:
        super().__init__()
        self.attention = attention

    def forward(self, x: Tensor, keep: Tensor) -> Tensor:
        score = (self.attention.repeat(len(x) // len(self.attention), 1) * x * keep).sum(-1)
        return torch.stack([score, torch.zeros_like(score)], -1)


class Toy(EvaluationHooks):
    """Items are the values x; erasing one sets keep to 0; the item attention is the model's, the
    item vectors x as (B, N, 1)."""

    def decision(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        return model(batch["x"], batch["keep"])

    def item_attention(self, model: nn.Module, batch: dict[str, Tensor]) -> Optional[ItemAttention]:
        return ItemAttention(model.attention.repeat(len(batch["x"]) // len(model.attention), 1), batch["valid"])

    def erase_items(self, batch: dict[str, Tensor], erased: Tensor) -> dict[str, Tensor]:
        return {**batch, "keep": batch["keep"] * ~erased}

    def item_forward(self, model: nn.Module, batch: dict[str, Tensor]) -> Optional[ItemForward]:
        swapped: list[Tensor] = []

        class Handle:
            def remove(self) -> None:
                swapped.pop()

        def install(vectors: Tensor) -> Handle:
            swapped.append(vectors[..., 0])
            return Handle()

        size = len(batch["x"])
        return ItemForward(
            batch["x"][..., None],
            replaying(batch, size, install, lambda b: model(swapped[-1], b["keep"])),
            replaying(batch, size, install, lambda b: self.item_attention(model, b).weights),
        )


def _toy() -> tuple[Weighted, Toy, dict[str, Tensor]]:
    attention = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4]])
    x = torch.tensor([[2.0, -1.0, 1.0, 3.0], [1.0, 1.0, -2.0, 1.0]])
    valid = torch.tensor([[True, True, True, False], [True, True, True, True]])
    return Weighted(attention), Toy(), {"x": x, "keep": valid.float(), "valid": valid}


def _p_first(score: float) -> float:
    """p(class 0) of logits [score, 0]."""
    return 1 / (1 + math.exp(-score))


# ------------------------------------------------------------------ ERASER


def test_ranks_and_rationales_by_hand():
    scores = torch.tensor([[0.1, 0.7, 0.2, 0.7], [0.4, 0.3, 0.2, 0.1]])
    valid = torch.tensor([[True, True, True, True], [True, True, False, False]])
    assert ranks(scores, valid).tolist() == [[3, 0, 2, 1], [0, 1, 4, 4]]  # ties in item order; invalid get N
    assert rationale_size(valid, 0.2).tolist() == [1, 1]
    assert rationale_size(valid, 0.5).tolist() == [2, 1]  # at most n - 1
    assert rationale_size(valid, 0.6).tolist() == [3, 1]  # ceil(2.4) = 3
    assert rationale_size(torch.tensor([[True, False]]), 0.5).tolist() == [0]  # one item: no rationale
    assert top_fraction(scores, valid, 0.5).tolist() == [[False, True, False, True], [True, False, False, False]]
    drawn = random_like(top_fraction(scores, valid, 0.5), valid, torch.Generator().manual_seed(0))
    assert drawn.sum(-1).tolist() == [2, 1] and not (drawn & ~valid).any()


def test_comprehensiveness_and_sufficiency_are_probability_drops():
    p = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    q = torch.tensor([[0.4, 0.5, 0.1], [0.3, 0.3, 0.4]])
    assert torch.allclose(probability_drop(p, q, torch.tensor([0, 2])), torch.tensor([0.3, 0.4]))


def test_eraser_rows_against_the_closed_form():
    model, task, batch = _toy()
    rows = {(r.setting.split(",")[0], r.measure): r for r in eraser_rows(model, task, [batch], fractions=(0.25, 0.5))}
    # example 1 (3 items): 25 % -> item 0 (a 0.5, x 2); 50 % -> ceil(1.5) = 2 items (0 and 1)
    # example 2 (4 items): 25 % -> item 3 (a 0.4, x 1); 50 % -> items 3 and 2 (a 0.3, x -2)
    full = [_p_first(0.5 * 2 - 0.3 + 0.2), _p_first(0.1 + 0.2 - 0.6 + 0.4)]  # both predict class 0
    without = {0.25: [_p_first(-0.3 + 0.2), _p_first(0.1 + 0.2 - 0.6)], 0.5: [_p_first(0.2), _p_first(0.1 + 0.2)]}
    only = {0.25: [_p_first(1.0), _p_first(0.4)], 0.5: [_p_first(1.0 - 0.3), _p_first(0.4 - 0.6)]}
    for fraction in (0.25, 0.5):
        comprehensiveness = sum(f - w for f, w in zip(full, without[fraction])) / 2
        sufficiency = sum(f - o for f, o in zip(full, only[fraction])) / 2
        assert rows[(f"top {fraction:.0%} of items", "comprehensiveness")].value == pytest.approx(comprehensiveness)
        assert rows[(f"top {fraction:.0%} of items", "sufficiency")].value == pytest.approx(sufficiency)
    aopc = rows[("AOPC over 25%", "AOPC comprehensiveness")]
    assert aopc.value == pytest.approx(sum(sum(f - w for f, w in zip(full, without[k])) / 2 for k in (0.25, 0.5)) / 2)
    assert aopc.against == "random items" and aopc.baseline is not None


class ExplainsTheFirstClass(Toy):
    """The toy, its decision explained by class 0 whatever it predicts (as translation explains
    the reference's probability)."""

    def explained_class(self, decision: Tensor) -> Tensor:
        return torch.zeros(len(decision), dtype=torch.long)


def test_eraser_follows_the_class_the_task_explains():
    """With the items' values negated both examples predict class 1: by default ERASER follows
    p(class 1) = 1 - p(class 0), and a task that explains class 0 gets the same drops of p(class 0),
    their sign turned."""
    model, _, batch = _toy()
    batch = {**batch, "x": -batch["x"]}
    full = [_p_first(-(0.5 * 2 - 0.3 + 0.2)), _p_first(-(0.1 + 0.2 - 0.6 + 0.4))]
    without = [_p_first(-(-0.3 + 0.2)), _p_first(-(0.1 + 0.2 - 0.6))]  # 25 %: items 0 and 3 erased
    found = {}
    for task in (Toy(), ExplainsTheFirstClass()):
        rows = eraser_rows(model, task, [batch], fractions=(0.25,))
        found[type(task)] = next(r.value for r in rows if r.measure == "comprehensiveness")
    first_class = sum(f - w for f, w in zip(full, without)) / 2
    assert found[ExplainsTheFirstClass] == pytest.approx(first_class)
    assert found[Toy] == pytest.approx(-first_class)


def test_eraser_asks_each_erasure_of_a_batch_once():
    model, task, batch = _toy()
    asked = []
    erase = task.erase_items
    task.erase_items = lambda b, erased: (asked.append(erased.clone()), erase(b, erased))[1]
    fractions = (0.1, 0.2, 0.25)  # one item of each example at all three
    rows = eraser_rows(model, task, [batch], fractions=fractions)
    distinct = {bytes(e.numpy().tobytes()) for e in asked[1:]}  # the first: erase_items' probe of nothing
    assert len(asked) - 1 == len(distinct), "no erasure computed twice"
    assert len(distinct) < 4 * len(fractions), "the attention's top items, the same at every fraction, once"
    values = {(r.setting.split(",")[0], r.measure): r.value for r in rows}
    assert len({values[(f"top {f:.0%} of items", "comprehensiveness")] for f in fractions}) == 1


# ------------------------------------------------------------------ plausibility


def test_token_f1_iou_and_auprc_by_hand():
    scores = torch.tensor([[0.9, 0.1, 0.8, 0.3], [0.2, 0.6, 0.1, 0.5]])
    gold = torch.tensor([[True, False, False, True], [False, True, False, False]])
    valid = torch.tensor([[True, True, True, True], [True, True, True, False]])
    chosen = hard_rationale(scores, gold, valid)
    assert chosen.tolist() == [[True, False, True, False], [False, True, False, False]]  # the top |G|
    assert token_f1(chosen, gold, valid).tolist() == [0.5, 1.0]
    assert iou(chosen, gold, valid).tolist() == [pytest.approx(1 / 3), 1.0]
    # P = 2/3, R = 1: F1 = 0.8; no right item: 0; no gold: NaN
    f1 = token_f1(
        torch.tensor([[True, True, True, False]] * 3),
        torch.tensor([[True, True, False, False], [False, False, False, True], [False] * 4]),
        torch.ones(3, 4, dtype=torch.bool),
    )
    assert f1[0] == pytest.approx(0.8) and f1[1] == 0 and math.isnan(f1[2])
    # ranked: 0.9 (gold), 0.8, 0.3 (gold), 0.1: AP = 1/2 x 1 + 1/2 x 2/3
    ap = auprc(scores, gold, valid)
    assert ap[0] == pytest.approx(0.5 + 1 / 3)
    assert ap[1] == pytest.approx(1.0)  # the one gold item ranked first, the invalid item left out
    assert math.isnan(float(auprc(scores[:1], torch.ones(1, 4, dtype=torch.bool), valid[:1])[0]))


def test_auprc_is_sklearn_s_average_precision_with_ties():
    from sklearn.metrics import average_precision_score

    generator = torch.Generator().manual_seed(0)
    scores = (torch.rand(20, 9, generator=generator) * 4).round()  # many ties
    gold = torch.rand(20, 9, generator=generator) < 0.3
    gold[:, 0] = True
    valid = torch.rand(20, 9, generator=generator) < 0.8
    valid[:, :2] = True
    gold[:, 1] = False
    found = auprc(scores, gold, valid)
    for row in range(20):
        keep = valid[row]
        assert found[row] == pytest.approx(average_precision_score(gold[row][keep].numpy(), scores[row][keep].numpy()))


def test_plausibility_rows_of_attention_against_item_gold():
    model, task, batch = _toy()
    task.gold_attention = lambda given: torch.tensor([[True, False, False, False], [False, False, True, True]])
    rows = {(r.setting.split(",")[0], r.measure): r for r in plausibility_rows(model, task, [batch], methods=())}
    # attention ranks item 0 first in example 1 (gold: item 0); items 3, 2 first in example 2 (gold: 2, 3)
    assert rows[("attention", "token F1")].value == 1.0 and rows[("attention", "IOU F1")].value == 1.0
    assert rows[("attention", "AUPRC")].value == 1.0
    assert rows[("attention", "AUPRC")].against == "random scores"


# ------------------------------------------------------------------ Captum's infidelity and sensitivity


def test_tiled_and_interleaved_orders_by_hand():
    rows = torch.arange(6)  # examples a, b with three copies each, Captum's order: a a a b b b
    assert tiled(rows, 2, 3).tolist() == [0, 3, 1, 4, 2, 5]  # a b a b a b
    assert interleaved(tiled(rows, 2, 3), 2, 3).tolist() == rows.tolist()
    assert tiled(torch.arange(12), 2, 3).tolist() == [0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]  # two blocks


def test_infidelity_is_the_normalised_squared_error_of_the_erasures():
    """Captum's normalised infidelity, against the formula: mean_s (beta a_s - d_s)^2 with a_s the
    score of the items erased by perturbation s, d_s the probability's drop, and the best beta."""
    model, task, batch = _toy()
    forward, valid = task.item_forward(model, batch), batch["valid"]
    target = torch.tensor([0, 0])
    scores = {"attention": model.attention, "values": batch["x"].abs()}
    found = infidelities(forward, valid, scores, target, samples=6, seed=3)
    generator = torch.Generator().manual_seed(3)
    erased = (torch.rand(12, 4, generator=generator) < DROP) & valid.repeat_interleave(6, 0)  # Captum's order
    for name, phi in scores.items():
        expected = []
        for row in range(2):
            a, d = [], []
            for s in range(6):
                e = erased[row * 6 + s]
                a.append(float((phi[row] * valid[row] * e).sum()))
                keep = batch["keep"][row] * ~e
                d.append(
                    _p_first(float((model.attention[row] * batch["x"][row] * batch["keep"][row]).sum()))
                    - _p_first(float((model.attention[row] * batch["x"][row] * keep).sum()))
                )
            a, d = torch.tensor(a, dtype=torch.float64), torch.tensor(d, dtype=torch.float64)
            beta = (a * d).sum() / (a * a).sum() if (a * a).sum() else 0.0
            expected.append(float(((beta * a - d) ** 2).mean()))
        assert found[name].tolist() == pytest.approx(expected, abs=1e-6), name


def test_gated_probabilities_follow_captum_s_order():
    model, task, batch = _toy()
    forward = task.item_forward(model, batch)
    gates = torch.ones(4, 4)
    gates[1, 0] = 0  # example 1's second copy loses item 0
    found = gated_probabilities(forward)(gates)
    assert found[0, 0] == pytest.approx(_p_first(0.9)) and found[1, 0] == pytest.approx(_p_first(-0.3 + 0.2))
    assert found[2, 0] == found[3, 0] == pytest.approx(_p_first(0.1))


def test_max_sensitivity_against_the_formula():
    """Captum's max-sensitivity of an explanation that depends on the vectors: max_s ||phi(x + d_s)
    - phi(x)|| / ||phi(x)||, with Captum's draws (uniform in [-r, r], torch's generator)."""
    model, task, batch = _toy()
    forward = task.item_forward(model, batch)
    square = forward._replace(attention=lambda vectors: vectors[..., 0] ** 2)
    found = sensitivities(
        square, {"square": attention_explanation(square)}, torch.tensor([0, 0]), samples=5, radius=0.1, seed=7
    )["square"]
    torch.manual_seed(7)
    moved = forward.vectors.repeat_interleave(5, 0) + torch.empty(10, 4, 1).uniform_(-0.1, 0.1)
    phi = batch["x"] ** 2
    expected = [
        max(float((moved[r * 5 + s, :, 0] ** 2 - phi[r]).norm() / phi[r].norm()) for s in range(5)) for r in range(2)
    ]
    assert found.tolist() == pytest.approx(expected, rel=1e-5)


# ------------------------------------------------------------------ graph fidelity


def test_top_edges_per_graph_by_hand():
    scores = torch.tensor([0.1, 0.9, 0.5, 0.3, 0.8, 0.2, 0.0])
    graph = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    candidates = torch.tensor([True, True, True, True, True, True, False])
    assert top_edges(scores, graph, candidates, 0.3).tolist() == [False, True, False, False, True, False, False]
    assert top_edges(scores, graph, candidates, 0.5).tolist() == [False, True, True, True, True, False, False]


def _star_batch():
    from torch_geometric.data import Batch, Data

    edge_index = torch.tensor([[1, 2, 3, 0, 0, 0], [0, 0, 0, 1, 2, 3]])
    graphs = [
        Data(
            x=torch.randn(4, 5, generator=torch.Generator().manual_seed(k)),
            edge_index=edge_index,
            target_mask=torch.tensor([True, False, False, False]),
        )
        for k in range(3)
    ]
    return Batch.from_data_list(graphs)


def test_graph_fidelity_is_pyg_s_on_the_attention_s_top_edges():
    from torch_geometric.explain.metric import characterization_score, fidelity

    from domains.graph.models import NodeClassifier

    torch.manual_seed(0)
    model, batch = NodeClassifier(5, 3, dropout=0.0, attention_dropout=0.0).eval(), _star_batch()
    rows = {
        (r.setting.split(",")[0], r.measure): r for r in graph_fidelity_rows(model, None, [batch], fractions=(0.2,))
    }
    explaining = explainer(model)
    index = batch.target_mask.nonzero().flatten()
    explanation = explaining(batch.x, batch.edge_index, index=index)
    hard = top_edges(explanation.edge_mask, batch.batch[batch.edge_index[1]], explanation.edge_mask > 0, 0.2)
    assert hard.sum() == 3 * 2  # ceil(0.2 x 6 edges) per star
    explanation.edge_mask = hard.float()
    plus, minus = fidelity(explaining, explanation)
    assert rows[("top 20% of edges", "fidelity+")].value == pytest.approx(plus)
    assert rows[("top 20% of edges", "fidelity-")].value == pytest.approx(minus)
    expected = float(
        characterization_score(torch.tensor(plus, dtype=torch.float64), torch.tensor(minus, dtype=torch.float64))
    )
    assert rows[("top 20% of edges", "characterization")].value == pytest.approx(expected)
    # the edges' messages are what is masked: without any edge, each centre decides from itself alone
    _, alone = fidelities(explaining, explaining(batch.x, batch.edge_index, index=index), torch.zeros_like(hard))
    isolated = model(batch.x, batch.edge_index[:, :0]).argmax(-1)[index]
    assert alone == pytest.approx(
        float((isolated != model(batch.x, batch.edge_index).argmax(-1)[index]).float().mean())
    )


def test_graph_fidelity_is_not_applicable_without_graph_attention():
    from domains.graph.models import NodeClassifier

    model = NodeClassifier(5, 3, attention="none").eval()  # GCN
    [row] = graph_fidelity_rows(model, None, [_star_batch()], fractions=(0.2,))
    assert row.value is None and row.against.startswith("n/a")


# ------------------------------------------------------------------ the attention-training families


def test_the_decoupling_loss_by_hand():
    weights = torch.tensor([[[0.7, 0.2, 0.1]], [[0.1, 0.1, 0.8]]])
    gold = torch.tensor([[[True, False, False]], [[False, False, False]]])
    # only the first query has gold: -log(1 - 0.7)
    assert float(attention_decoupling_loss(weights, gold)) == pytest.approx(-math.log(0.3 + 1e-6))
    keys = torch.tensor([[[False, True, True]], [[True, True, True]]])
    assert float(attention_decoupling_loss(weights, gold, keys)) == 0.0  # its gold key is not valid: no query counts


def test_the_families_losses_add_up_and_refuse_bad_options():
    weights = torch.tensor([[[0.6, 0.3, 0.1]]])
    gold = torch.tensor([[[False, True, False]]])
    both = AttentionTraining()
    both.attention_options(2.0, 0.5)
    total, logs = both.gold_losses(weights, gold)
    assert set(logs) == {"attention_loss", "decoupling_loss"}
    assert float(total) == pytest.approx(2.0 * -math.log(0.3) + 0.5 * -math.log(0.7 + 1e-6), rel=1e-5)
    assert float(attention_supervision_loss(weights, gold)) == pytest.approx(-math.log(0.3))
    with pytest.raises(ConfigError, match="task.random_attention=true .* takes no"):
        AttentionTraining().attention_options(1.0, 0.0, True)


def test_random_attention_is_set_on_unablated_blocks_only():
    from domains.demo import SequenceClassifier
    from framework.attention import ablation

    model = SequenceClassifier(20, 3, depth=2)
    with ablation(model, "uniform", "encoder.layers.0.*"):
        names = randomise_attention(model)
        assert names == ["encoder.layers.1.attention"]
    assert [m.ablation for m in model.modules() if hasattr(m, "block_name")] == [None, "random"]


def test_recall_batches_mark_the_queried_pair():
    from domains.demo import AssociativeRecall

    data = AssociativeRecall(num_keys=16, num_values=10, train_size=64, val_size=8, test_size=8)
    data.setup("fit")
    batch = next(iter(data.train_dataloader()))
    assert data.gold_evidence and batch["gold"].sum(-1).eq(1).all()
    rows = torch.arange(len(batch["tokens"]))
    last = batch["mask"].sum(-1) - 1
    asked = batch["tokens"][rows, last] - 16 * 10
    pair = batch["tokens"][batch["gold"]]
    assert torch.equal(pair // 10, asked) and torch.equal(pair % 10, batch["target"])


def test_the_demo_s_families_train_on_the_read_out_s_attention():
    """Supervision adds lambda x CE of the read-out row against the queried pair, decoupling mu x
    -log(1 - m); the model never sees the gold; random attention draws every block's weights."""
    import torch.nn.functional as F

    from domains.demo import AssociativeRecall, SequenceClassification, SequenceClassifier

    data = AssociativeRecall(train_size=32, val_size=8, test_size=8, batch_size=32)
    data.setup("fit")
    batch = next(iter(data.train_dataloader()))
    torch.manual_seed(0)
    model = SequenceClassifier(data.vocab_size, 10)
    plain = SequenceClassification(10)
    items = plain.item_attention(model, batch)
    mass = (items.weights * batch["gold"]).sum(-1)
    cross_entropy = F.cross_entropy(model(batch["tokens"], batch["mask"]), batch["target"])
    assert float(plain.step(model, batch, "train").loss) == pytest.approx(float(cross_entropy), rel=1e-5)
    supervised = SequenceClassification(10, attention_supervision=2.0)
    decoupled = SequenceClassification(10, decouple_attention=0.5)
    step = supervised.step(model, batch, "train")
    assert float(step.loss) == pytest.approx(float(cross_entropy - 2.0 * mass.log().mean()), rel=1e-4)
    assert float(step.logs["attention_loss"]) == pytest.approx(float(-mass.log().mean()), rel=1e-4)
    step = decoupled.step(model, batch, "train")
    assert float(step.loss) == pytest.approx(float(cross_entropy - 0.5 * (1 - mass + 1e-6).log().mean()), rel=1e-4)
    assert float(step.logs["decoupling_loss"]) == pytest.approx(float(-(1 - mass + 1e-6).log().mean()), rel=1e-4)
    with pytest.raises(ConfigError, match="needs token batches with gold evidence"):
        supervised.check(model, type("NoGold", (), {})())
    randomised = SequenceClassification(10, random_attention=True)
    randomised.check(model, data)
    assert {m.ablation for m in model.modules() if hasattr(m, "block_name")} == {"random"}
    assert not torch.allclose(randomised.decision(model, batch), randomised.decision(model, batch))


# ------------------------------------------------------------------ the tests end to end, on a trained demo


@pytest.fixture(scope="module")
def small_demo(tmp_path_factory):
    from framework.__main__ import main

    folder = tmp_path_factory.mktemp("measures") / "runs" / "demo" / "fit"
    main(
        [
            "fit",
            "--config",
            str(ROOT / "domains/demo/demo.yaml"),
            *QUIET,
            "--trainer.max_epochs=2",
            "--data.train_size=4000",
            "--data.test_size=64",
            "--run_dir",
            str(folder),
        ]
    )
    return folder


@pytest.mark.slow
def test_evaluate_gives_the_standard_measures(small_demo):
    from framework.__main__ import main

    main(
        [
            "evaluate",
            "--config",
            str(small_demo / "config.yaml"),
            "--ckpt_path",
            str(small_demo / "checkpoints/best.ckpt"),
            *QUIET,
            "--tests=[eraser, plausibility, infidelity, sensitivity, graph_fidelity]",
            "--examples=32",
            "--attribution_steps=4",
            "--perturb_samples=3",
            "--fractions=[0.1, 0.5]",
            "--run_dir",
            str(small_demo.parent / "evaluate"),
        ]
    )
    with (small_demo.parent / "evaluate" / "evaluation.csv").open(newline="") as handle:
        table = list(csv.DictReader(handle))
    found = {(r["test"], r["measure"], r["setting"].split(",")[0]): r for r in table}
    comprehensive = found[("eraser", "AOPC comprehensiveness", "AOPC over 10%")]
    assert float(comprehensive["value"]) > float(comprehensive["baseline"])  # attention beats random items
    assert float(found[("plausibility", "AUPRC", "attention")]["value"]) > float(
        found[("plausibility", "AUPRC", "attention")]["baseline"]
    )
    assert {key[2] for key in found if key[0] == "infidelity"} == {
        "attention",
        "gradient_x_input",
        "integrated_gradients",
        "leave_one_out",
    }
    assert all(float(r["value"]) >= 0 for r in table if r["test"] in ("infidelity", "sensitivity"))
    assert found[("graph fidelity", "-", "-")]["against"].startswith("n/a")


@pytest.mark.slow
def test_evaluate_refuses_bad_standard_options(small_demo):
    from framework.__main__ import main

    args = [
        "evaluate",
        "--config",
        str(small_demo / "config.yaml"),
        "--ckpt_path",
        str(small_demo / "checkpoints/best.ckpt"),
        *QUIET,
    ]
    for flag in ("--fractions=[0, 0.5]", "--perturb_samples=0", "--perturb_radius=-1"):  # outside their domains
        with pytest.raises(SystemExit) as stop:
            main([*args, "--tests=[eraser]", flag])
        assert stop.value.code == 2
