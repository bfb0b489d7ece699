"""``python -m framework evaluate`` and its measures: each measure against hand-computed values on
tiny inputs, the ablation switch (``none`` included), supervised attention, and the command end
to end on a trained demo (the table, ``evaluation.csv``, ``test --ablation``)."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import pytest
import torch
from torch import nn

from framework.attention import ablation, blocks_in, create
from framework.errors import ConfigError
from framework.evaluation.block_ablation import skippable, skipped
from framework.evaluation.faithfulness import random_k, top_k
from framework.evaluation.measures import (
    alignment_counts,
    alignment_error_rate,
    attention_correctness,
    hard_alignment,
    jensen_shannon,
    kendall_tau,
    kendall_tau_b,
    total_variation,
    uniform_correctness,
)
from framework.evaluation.protocol import erase_tokens, probe_forward
from framework.evaluation.rollout import attention_rollout, self_attention_stacks
from framework.evaluation.table import COLUMNS, Row, as_records, format_table, write_csv
from framework.tasks.attention_training import attention_supervision_loss

ROOT = Path(__file__).resolve().parents[1]
DEMO = str(ROOT / "domains/demo/demo.yaml")
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


# ------------------------------------------------------------------ measures, by hand


def test_total_variation_and_jensen_shannon_distance_by_hand():
    p, q = torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.25, 0.25, 0.5])
    assert float(total_variation(p, q)) == pytest.approx(0.5)  # 1/2 (0.25 + 0.25 + 0.5)
    assert float(jensen_shannon(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))) == pytest.approx(1.0)
    assert float(jensen_shannon(p, p)) == pytest.approx(0.0, abs=1e-6)
    # m = (0.75, 0.25): KL(p||m) = 0.5 log2(0.5/0.75) + 0.5 log2(0.5/0.25) = 0.20752, KL(q||m) = log2(1/0.75) = 0.41504
    expected = math.sqrt(0.5 * (0.5 * math.log2(0.5 / 0.75) + 0.5) + 0.5 * math.log2(1 / 0.75))
    assert float(jensen_shannon(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0]))) == pytest.approx(expected)
    batch = total_variation(torch.stack([p, p]), torch.stack([q, p]))
    assert batch.tolist() == pytest.approx([0.5, 0.0])


def test_kendall_tau_b_by_hand_with_ties_and_validity():
    a = torch.tensor([[1.0, 2, 3, 4], [1, 2, 3, 9], [1, 1, 2, 0], [1, 2, 3, 0], [5, 5, 5, 0]])
    b = torch.tensor([[1.0, 2, 3, 4], [4, 3, 2, 9], [1, 2, 3, 0], [1, 3, 2, 0], [1, 2, 3, 0]])
    valid = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 0]]).bool()
    tau = kendall_tau(a, b, valid).tau
    assert tau[0] == pytest.approx(1.0) and tau[1] == pytest.approx(-1.0)
    assert tau[2] == pytest.approx(2 / math.sqrt(6))  # 2 concordant pairs, 1 tie in a: 2 / sqrt((3 - 1) * 3)
    assert tau[3] == pytest.approx(1 / 3)  # 2 concordant, 1 discordant of 3 pairs
    assert math.isnan(tau[4])  # constant attention: undefined


def test_the_vectorised_tau_b_is_scipys_row_by_row_with_ties_masks_and_chunks():
    generator = torch.Generator().manual_seed(0)
    a = torch.randint(0, 5, (40, 12), generator=generator).double()  # many ties
    b = (a + torch.randint(-2, 3, (40, 12), generator=generator)).double()
    valid = torch.rand(40, 12, generator=generator) > 0.25
    valid[0] = False
    valid[1, 1:] = False  # one valid item: undefined
    a[2] = 3.0  # a constant side: undefined
    expected = kendall_tau(a, b, valid).tau
    for chunk in (1 << 22, 144, 1):  # all rows at once, one row, at least one row a chunk
        got = kendall_tau_b(a, b, valid, pairs_per_chunk=chunk)
        assert torch.allclose(got, expected, equal_nan=True, atol=1e-12)
    assert got[:3].isnan().all() and not got[3:].isnan().all()
    hand = kendall_tau_b(torch.tensor([[1.0, 1, 2, 0]]), torch.tensor([[1.0, 2, 3, 0]]), torch.tensor([[1, 1, 1, 0]]))
    assert float(hand) == pytest.approx(2 / math.sqrt(6))  # 2 concordant pairs, 1 tie in a: 2 / sqrt((3 - 1) * 3)


def test_attention_correctness_and_its_uniform_baseline_by_hand():
    weights = torch.tensor([[[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]]])  # (B=1, Q=2, K=3)
    gold = torch.tensor([[[False, True, True], [True, False, False]]])
    assert attention_correctness(weights, gold)[0].tolist() == pytest.approx([0.9, 0.5])
    assert float(attention_correctness(weights, gold, torch.tensor([[True, False]]))) == pytest.approx(0.9)
    keys = torch.tensor([[[True, True, True], [True, True, False]]])
    # uniform attention: 2 of 3 valid keys gold; 1 of 2
    assert float(uniform_correctness(gold, keys, torch.tensor([[True, True]]))) == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_the_alignment_error_rate_of_a_hand_made_alignment():
    sure = torch.zeros(3, 4, dtype=torch.bool)
    sure[0, 0] = sure[1, 1] = True
    possible = sure.clone()
    possible[1, 2] = possible[2, 3] = True
    weights = torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.1, 0.2, 0.6, 0.1], [0.1, 0.5, 0.2, 0.2]])
    alignment = hard_alignment(weights)
    assert alignment.nonzero().tolist() == [[0, 0], [1, 2], [2, 1]]
    # A = {(0,0), (1,2), (2,1)}, S = {(0,0), (1,1)}, P = S + {(1,2), (2,3)}: |A n S| = 1, |A n P| = 2
    assert alignment_error_rate(alignment, sure, possible) == pytest.approx(1 - (1 + 2) / (3 + 2))
    assert alignment_error_rate(sure, sure, possible) == pytest.approx(0.0)  # the sure links themselves
    counts = alignment_counts(alignment, sure, possible, queries=torch.tensor([True, True, False]))
    assert tuple(counts) == (2, 2, 1, 2) and counts.aer == pytest.approx(1 - 3 / 4)
    masked = hard_alignment(weights, keys=torch.tensor([False, True, True, True]))
    assert masked[0].nonzero().flatten().tolist() == [1]  # the arg-max among the valid keys


def test_attention_rollout_by_hand():
    first = torch.tensor([[[0.2, 0.8], [0.6, 0.4]]])
    identity = torch.eye(2)[None]
    # (A + I) / 2 of the first layer, then the identity layer changes nothing
    assert torch.allclose(attention_rollout([first, identity]), torch.tensor([[[0.6, 0.4], [0.3, 0.7]]]))
    heads = torch.stack([torch.eye(2), torch.tensor([[0.0, 1.0], [1.0, 0.0]])])[None]  # (B, h, N, N): averaged
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]])[None]
    # layer 1 (heads averaged): [[.75, .25], [.25, .75]]; layer 2: [[.5, .5], [.5, .5]]; rollout = layer 2 @ layer 1
    assert torch.allclose(attention_rollout([heads, swap]), torch.full((1, 2, 2), 0.5))
    rolled = attention_rollout([first, swap])
    assert torch.allclose(rolled, torch.tensor([[[0.5, 0.5], [0.5, 0.5]]]) @ torch.tensor([[[0.6, 0.4], [0.3, 0.7]]]))


def test_the_supervision_loss_is_the_cross_entropy_against_uniform_gold():
    weights = torch.tensor([[[0.5, 0.25, 0.25]], [[0.2, 0.3, 0.5]]])
    gold = torch.tensor([[[True, True, False]], [[False, False, False]]])  # the second query has no gold: not counted
    expected = -(0.5 * math.log(0.5) + 0.5 * math.log(0.25))
    assert float(attention_supervision_loss(weights, gold)) == pytest.approx(expected)
    assert float(attention_supervision_loss(weights, torch.zeros_like(gold))) == 0.0


def test_erasing_tokens_cuts_them_out_and_keeps_the_order():
    tokens = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    mask = tokens.ne(0)
    erased = torch.tensor([[False, True, False, False], [True, False, False, False]])
    kept, kept_mask = erase_tokens(tokens, mask, erased)
    assert kept.tolist() == [[5, 7, 0, 0], [9, 0, 0, 0]] and kept_mask.tolist() == [[1, 1, 0, 0], [1, 0, 0, 0]]
    words = torch.tensor([[[1, 2], [3, 0]]])  # (B, S, W): erased given flat over S W
    out, out_mask = erase_tokens(words, words.ne(0), torch.tensor([[True, False, False, False]]))
    assert out.tolist() == [[[2, 0], [3, 0]]] and out_mask.tolist() == [[[True, False], [True, False]]]


def test_top_k_and_random_k_items():
    weights = torch.tensor([[0.1, 0.5, 0.3, 0.1], [0.6, 0.2, 0.2, 0.0]])
    valid = torch.tensor([[True, True, True, True], [True, True, True, False]])
    assert top_k(weights, valid, 1).nonzero().tolist() == [[0, 1], [1, 0]]
    others = random_k(valid & ~top_k(weights, valid, 1), 2, torch.Generator().manual_seed(0))
    assert others.sum(-1).tolist() == [2, 2] and not (others & ~valid).any() and not others[0, 1] and not others[1, 0]


def test_the_table_prints_and_writes_csv(tmp_path):
    rows = [
        Row("ablation", "head", "uniform", "test/acc", 0.1, 0.98, "plain"),
        Row("intrinsic", "-", "-", "-", None, None, "n/a: no gold attention"),
    ]
    text = format_table(rows)
    assert "0.1000" in text and "0.9800 (plain)" in text and "n/a: no gold attention" in text
    path = write_csv(rows, tmp_path / "evaluation.csv")
    table = list(csv.DictReader(path.open()))
    assert table[0]["value"] == "0.1" and table[0]["against"] == "plain" and table[1]["value"] == ""


def test_rows_with_and_without_a_baseline_make_one_wandb_table():
    wandb = pytest.importorskip("wandb")
    rows = [
        Row("test", "-", "plain", "test/acc", 0.5),
        Row("ablation", "layers.0", "uniform", "test/acc", 0.31, 0.33, "plain"),
        Row("test", "-", "plain", "test/f1", math.nan),
    ]
    table = wandb.Table(columns=list(COLUMNS), data=as_records(rows))
    assert table.data[1][5] == 0.33 and table.data[0][5] is None and table.data[2][4] is None


def test_the_report_reaches_loggers_that_take_tables_and_images(tmp_path):
    from framework.commands.evaluate import report

    class TableLogger:
        def __init__(self) -> None:
            self.tables, self.images = {}, {}

        def log_table(self, key, columns, data):
            self.tables[key] = (columns, data)

        def log_image(self, key, images):
            self.images[key] = images

    logger, said = TableLogger(), []
    picture = torch.zeros(4, 6, 3, dtype=torch.uint8)
    report(
        [Row("test", "-", "plain", "test/acc", 0.5)],
        {"rollout/encoder.layers.*.attention": picture},
        tmp_path,
        [logger, object()],
        said.append,
    )
    columns, data = logger.tables["evaluation"]
    assert columns[:5] == ["test", "block", "setting", "measure", "value"] and data == [
        ["test", "-", "plain", "test/acc", 0.5, None, ""]
    ]
    assert set(logger.images) == {"evaluation/rollout/encoder.layers.*.attention"}
    assert (tmp_path / "evaluation.csv").is_file() and (
        tmp_path / "evaluation" / "rollout_encoder.layers.x.attention.png"
    ).is_file()
    assert "test/acc" in said[0] and said[-1].startswith("evaluation table:")


# ------------------------------------------------------------------ ablation: none, patterns, rollout stacks


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention = create("mhsa", 8, num_heads=2)
        self.pool = create("pooling", 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x + self.attention(x))


def test_none_skips_blocks_whose_output_has_their_input_shape_only():
    model, x = Residual().eval(), torch.randn(2, 5, 8)
    assert skippable(model, lambda: model(x)) == {"attention": None, "pool": "output shape differs"}
    with skipped(model, "attention"):
        assert torch.allclose(model(x), model.pool(x + x))
    with pytest.raises(ValueError, match="pool .*only a block whose output has its input's shape"):
        with skipped(model, "pool"):
            model(x)
    with pytest.raises(ValueError, match="no attention block matches"):
        blocks_in(model, "decoder.*")
    assert list(blocks_in(model, "mhsa")) == ["attention"]


def test_the_probes_forward_pass_is_a_test_pass_without_loss_gradient_or_dropout():
    from framework.tasks import Task

    class NoTraining(Task):
        def losses(self, output, target):
            raise AssertionError("a probe computed a loss")

        def step(self, model, batch, stage):
            raise AssertionError(f"a probe ran a {stage} step")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 3)).train()
    batch = (torch.randn(5, 4), torch.zeros(5, dtype=torch.long))
    first, second = probe_forward(NoTraining(), model, batch), probe_forward(NoTraining(), model, batch)
    assert not model.training and not first.requires_grad
    torch.testing.assert_close(first, second)  # no dropout mask drawn
    torch.testing.assert_close(first, model[2](model[0](batch[0])).detach())  # the layers alone, dropout the identity
    assert all(p.grad is None for p in model.parameters())


def test_rollout_finds_stacks_of_self_attention():
    from domains.demo import SequenceClassifier
    from domains.nlp import TransformerSeq2Seq

    assert self_attention_stacks(SequenceClassifier(20, 3, dim=16, depth=3)) == {
        "encoder.layers.*.attention": [f"encoder.layers.{i}.attention" for i in range(3)]
    }
    stacks = self_attention_stacks(TransformerSeq2Seq(20, dim=16, depth=2))
    assert set(stacks) == {"encoder.layers.*.attention", "decoder.*.self_attention"}
    assert self_attention_stacks(Residual()) == {}


# ------------------------------------------------------------------ supervised attention


def _hop_correctness(model, task, loader) -> float:
    masses = []
    with torch.no_grad():
        for batch in loader:
            for view in task.gold_views(model, batch):
                masses.append(attention_correctness(view.weights, view.gold, view.queries))
    return float(torch.stack(masses).mean())


@pytest.mark.slow
def test_strong_supervision_makes_the_hops_match_the_supporting_facts():
    from domains.memory import MemN2N, QuestionAnswering
    from domains.memory.data import GeneratedStories

    data = GeneratedStories(train_size=640, val_size=96, test_size=8, batch_size=32)
    data.setup("fit")
    found = {}
    for weight in (0.0, 1.0):
        torch.manual_seed(0)
        model, task = MemN2N(34, random_noise=0.0), QuestionAnswering(attention_supervision=weight)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for _ in range(10):  # 200 steps, a few seconds
            for batch in data.train_dataloader():
                optimizer.zero_grad()
                step = task.step(model, batch, "train")
                step.loss.backward()
                optimizer.step()
        if weight:
            assert set(step.logs) == {"attention_loss"}
        found[weight] = _hop_correctness(model.eval(), task, data.val_dataloader())
    # measured: 0.77 with supervision, 0.34 without (1/6 to 1/2 of the mass for uniform hops)
    assert found[1.0] > 0.6 and found[1.0] > found[0.0] + 0.25, found


# ------------------------------------------------------------------ the command, on a trained demo


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """A demo trained to val/acc > 0.9 (2 epochs of 8000 examples), in its own run folder."""
    from framework.__main__ import main

    folder = tmp_path_factory.mktemp("demo") / "runs" / "demo" / "fit"
    before = os.environ.get("FRAMEWORK_RUN_DIR")
    fitted = main(
        [
            "fit",
            "--config",
            DEMO,
            *QUIET,
            "--trainer.logger=false",
            "--trainer.max_epochs=2",
            "--data.test_size=500",
            "--run_dir",
            str(folder),
        ]
    )
    if before is None:
        os.environ.pop("FRAMEWORK_RUN_DIR", None)
    best = Path(fitted.trainer.checkpoint_callback.best_model_path)
    score = float(fitted.trainer.checkpoint_callback.best_model_score)
    return folder, best, score


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_uniform_ablation_of_the_trained_demo_drops_it_to_the_guessing_level(demo_run):
    """Uniform weights keep which values the list holds but not which pair the query asks for:
    accuracy falls to guessing among the listed values (about 0.28); skipping the blocks leaves
    the read-out token alone, at 1 in 10."""
    import lightning.pytorch as pl

    from domains.demo import AssociativeRecall
    from framework import TaskModule

    _, best, score = demo_run
    assert score > 0.9
    module, data = TaskModule.load_from_checkpoint(best), AssociativeRecall(val_size=1000)
    trainer = pl.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)
    data.setup("validate")
    val = data.split("val")
    pairs = val.mask[:, :-1] & (torch.arange(val.tokens.shape[1] - 1) < val.mask.sum(1, keepdim=True) - 1)
    listed = (val.tokens[:, :-1] % 10 == val.target[:, None]) & pairs  # pair tokens k * 10 + v holding the answer
    guessing = float((listed.sum(1) / pairs.sum(1)).mean())
    results = {}
    for mode in ("uniform", "none", None):
        with skipped(module.model) if mode == "none" else ablation(module.model, mode):
            results[mode] = trainer.validate(module, datamodule=data, verbose=False)[0]["val/acc"]
    assert results[None] > 0.9
    assert abs(results["uniform"] - guessing) < 0.1 and results["uniform"] < 0.4, (results, guessing)
    assert abs(results["none"] - 0.1) < 0.05, results


@pytest.mark.slow
def test_evaluate_on_the_demo_writes_the_table(demo_run, capsys, monkeypatch):
    from framework.__main__ import main
    from framework.tasks import Task

    stages, passes = [], []
    step, forward_pass = Task.step, Task.forward_pass
    monkeypatch.setattr(
        Task, "step", lambda task, model, batch, stage: stages.append(stage) or step(task, model, batch, stage)
    )
    monkeypatch.setattr(
        Task,
        "forward_pass",
        lambda task, model, batch: (
            passes.append((model.training, torch.is_grad_enabled())) or forward_pass(task, model, batch)
        ),
    )
    from framework.commands import evaluate as command

    counted = []
    close = command.Steps.__exit__
    monkeypatch.setattr(
        command.Steps, "__exit__", lambda steps, *exc: counted.append((steps.done, steps.total)) or close(steps, *exc)
    )
    folder, best, _ = demo_run
    main(
        [
            "evaluate",
            "--config",
            str(folder / "config.yaml"),
            "--ckpt_path",
            str(best),
            *QUIET,
            "--trainer.logger=false",
            "--examples=64",
            "--permutations=2",
            "--attribution_steps=4",
            "--ablation_modes=[uniform,none]",
        ]
    )
    printed = capsys.readouterr().out
    # the status's steps: 3 ablated blocks (2 and all) x 2 modes, and one batch of 64 examples for 2 tests
    assert counted == [(8, 8)]
    runs = sorted(folder.parent.glob("*_evaluate"))
    assert len(runs) == 1, "the evaluation gets its own folder beside the fit"
    table = _table(runs[0] / "evaluation.csv")
    assert "permutation" in printed and "evaluation table:" in printed
    tests = {row["test"] for row in table}
    assert tests == {"test", "ablation", "permutation", "erasure", "attribution", "intrinsic", "maps"}
    ablations = {(row["block"], row["setting"]) for row in table if row["test"] == "ablation"}
    blocks = ["encoder.layers.0.attention", "encoder.layers.1.attention", "all"]
    assert ablations == {(b, m) for b in blocks for m in ("uniform", "none")}
    plain = next(float(r["value"]) for r in table if r["test"] == "test" and r["measure"] == "test/acc")
    assert plain > 0.9
    uniform_all = next(float(r["value"]) for r in table if r["block"] == "all" and r["setting"] == "uniform")
    assert uniform_all < 0.4
    methods = {row["setting"] for row in table if row["test"] == "attribution"}
    assert {"gradient_x_input", "integrated_gradients", "leave_one_out"} <= methods
    erasure = next(r for r in table if r["test"] == "erasure" and r["measure"] == "decision flips")
    assert float(erasure["value"]) > float(erasure["baseline"]), "the top-attended pair matters more than a random one"
    intrinsic = next(r for r in table if r["test"] == "intrinsic" and r["measure"] == "attention correctness")
    assert intrinsic["block"] == "items" and float(intrinsic["value"]) > 2 * float(intrinsic["baseline"]), (
        "the read-out attends the queried pair (the demo's gold) more than uniform attention does"
    )
    assert (runs[0] / "evaluation" / "rollout_encoder.layers.x.attention.png").is_file()
    assert set(stages) == {"test"}, "the probes run a test forward pass, never a training step"
    assert passes == [(False, False)] * 3, (
        "forward passes in eval mode without gradients: the ablation probe, the rollout, the maps"
    )
    assert (runs[0] / "evaluation" / "maps_encoder.layers.1.attention.png").is_file()


@pytest.mark.slow
def test_test_with_ablation_on_the_command_line(demo_run):
    from framework.__main__ import main

    folder, best, _ = demo_run
    args = ["test", "--config", str(folder / "config.yaml"), "--ckpt_path", str(best), *QUIET, "--trainer.logger=false"]
    plain = main(args).trainer.callback_metrics["test/acc"]
    ablated = main([*args, "--ablation=uniform"]).trainer.callback_metrics["test/acc"]
    one = main([*args, "--ablation=none", "--ablation_blocks=[encoder.layers.1.*]"]).trainer.callback_metrics[
        "test/acc"
    ]
    assert plain > 0.9 and ablated < 0.4 and ablated < one < plain
    with pytest.raises(ConfigError, match="--ablation_blocks: no attention block matches"):
        main([*args, "--ablation=uniform", "--ablation_blocks=[decoder]"])
    with pytest.raises(SystemExit) as stop:  # refused by the parser: not a mode
        main([*args, "--ablation=zero"])
    assert stop.value.code == 2
    with pytest.raises(ConfigError, match="--ablation applies to test"):
        main(["fit", "--config", DEMO, *QUIET, "--trainer.logger=false", "--ablation=uniform", "--trainer.max_steps=1"])


def test_evaluate_refuses_bad_options_naming_the_flag(demo_run):
    from framework.__main__ import main

    folder, best, _ = demo_run
    args = ["evaluate", "--config", str(folder / "config.yaml"), *QUIET, "--trainer.logger=false"]
    with pytest.raises(ConfigError, match="evaluate needs --ckpt_path"):
        main(args)
    with pytest.raises(SystemExit) as stop:  # refused by the parser: not a test
        main([*args, "--ckpt_path", str(best), "--tests=[speed]"])
    assert stop.value.code == 2


def test_the_evaluation_status_counts_its_steps_and_projects_the_end(monkeypatch):
    from framework.commands.evaluate import Steps

    clock = [0.0]
    monkeypatch.setattr("framework.commands.evaluate.time.monotonic", lambda: clock[0])
    said = []
    with Steps(total=4, say=said.append, every=0) as steps:
        steps.say("evaluate: ablation uniform of encoder.layers.0.attention")
        assert steps.describe() == "evaluate: 0/4 steps · ablation uniform of encoder.layers.0.attention"
        clock[0] = 10.0
        steps.say("evaluate: faithfulness (permutation, erasure, attribution)")  # no step of its own
        batches = steps.batches("faithfulness", ["a", "b"])
        assert next(batches) == "a" and steps.describe() == "evaluate: 1/4 steps · faithfulness, batch 1 · ETA 30 s"
        assert list(batches) == ["b"] and steps.done == 3
    assert said == [
        "evaluate: ablation uniform of encoder.layers.0.attention",
        "evaluate: faithfulness (permutation, erasure, attribution)",
    ]
