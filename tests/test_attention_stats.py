"""The attention statistics and the collapse monitor (``framework/callbacks``), on the demo: the
logged statistics equal those of the full maps of the trained model, the monitor stays quiet on
a normal run and names the block a planted collapse (its weights forced uniform) struck, and
each kind of collapse, the gold mass and the W&B alert are checked on numbers made by hand."""

from __future__ import annotations

import csv
import logging
import math
from types import SimpleNamespace

import lightning.pytorch as pl
import pytest
import torch
from lightning.pytorch.loggers import CSVLogger, WandbLogger

from domains.demo import AssociativeRecall, SequenceClassification, SequenceClassifier
from framework.attention import Record, capture, create
from framework.attention.statistics import row_statistics
from framework.callbacks import AttentionCollapse, AttentionStatistics, attention_stats, collapse
from framework.commands.fit import FrameworkCLI
from framework.evaluation.protocol import GoldView
from framework.task_module import TaskModule

LOG = "lightning.pytorch.utilities.rank_zero"


def fit(tmp_path, callbacks, epochs=3, uniform=None):
    """The demo (2 layers of 8 heads) trained for ``epochs`` on 1024 examples, CSV-logged; with
    ``uniform`` the named block's weights are forced uniform throughout."""
    torch.manual_seed(0)
    module = TaskModule(SequenceClassifier(177, 10, dim=16, depth=2), SequenceClassification(10))
    if uniform:
        module.model.get_submodule(uniform).ablation = "uniform"
    data = AssociativeRecall(train_size=1024, val_size=64, test_size=32, batch_size=32)
    trainer = pl.Trainer(
        max_epochs=epochs,
        logger=CSVLogger(tmp_path, name="run"),
        callbacks=callbacks,
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(module, data)
    rows = list(csv.DictReader(open(trainer.logger.log_dir + "/metrics.csv")))
    return module, data, [row for row in rows if row.get("val/loss")]


def test_the_logged_statistics_are_those_of_the_full_maps(tmp_path):
    module, data, validations = fit(tmp_path, [AttentionStatistics(top_k=3)], epochs=2)
    assert len(validations) == 2
    batch = next(iter(data.val_dataloader()))
    module.model.eval()
    with torch.no_grad(), capture(module.model) as full:  # the full maps, on the eager path
        module.task.step(module.model, batch, "val")
    last = validations[-1]
    for name, (record,) in full.items():
        stats = row_statistics(record, top_k=3)
        for statistic, values in stats.values().items():
            assert float(last[f"attention/{name}/{statistic}"]) == pytest.approx(float(values.mean()), rel=1e-5)
            for head, value in enumerate(values):
                assert float(last[f"attention/{name}/head{head}/{statistic}"]) == pytest.approx(float(value), rel=1e-5)
    gold = {key: float(value) for key, value in last.items() if key.startswith("attention/gold") and value}
    assert gold == pytest.approx(
        attention_stats.gold_masses(module.model, module.task, batch)
    )  # where the data has gold


def collapse_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == LOG and "attention collapse" in r.getMessage()]


def test_the_monitor_stays_quiet_on_the_demo_and_uses_the_statistics_already_computed(tmp_path, caplog, monkeypatch):
    def second_pass(*args, **kwargs):
        raise AssertionError("the monitor ran a second pass")

    monkeypatch.setattr(collapse, "probe_statistics", second_pass)
    with caplog.at_level(logging.WARNING, logger=LOG):
        fit(tmp_path, [AttentionStatistics(), AttentionCollapse()], epochs=4)
    assert collapse_lines(caplog) == []


@pytest.mark.slow
def test_the_monitor_names_a_block_forced_uniform(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger=LOG):
        module, _, validations = fit(tmp_path, [AttentionCollapse()], epochs=3, uniform="encoder.layers.0.attention")
    (line,) = collapse_lines(caplog)  # one line for the event, every head named
    assert line.startswith(
        "attention collapse: encoder.layers.0.attention heads 0, 1, 2, 3, 4, 5, 6, 7: uniform (entropy ratio 1.000"
    )
    losses = [float(v["val/loss"]) for v in validations]
    assert losses[1] < losses[0] and f"val/loss fell from {losses[0]:.4g} to {losses[1]:.4g}" in line


def statistics(rows, valid=None):
    """The statistics of a hand-made record of rows (B, h, R, K) over a 1-D grid of K keys."""
    return row_statistics(
        Record(rows, (rows.shape[-2],), (rows.shape[-1],), probes=torch.arange(rows.shape[-2]), valid=valid)
    )


def test_each_kind_of_collapse_fires_once_when_the_loss_falls():
    torch.manual_seed(0)
    one_hot = torch.zeros(2, 1, 4, 4)
    one_hot[..., 0] = 1.0  # every query on key 0
    frozen = torch.rand(2, 1, 4, 4).softmax(-1)
    monitor = AttentionCollapse(patience=2)
    said = []
    for loss in (1.0, 0.8, 0.6, 0.5):
        lively = torch.rand(2, 1, 4, 4).softmax(-1)
        said += monitor.observe(
            {"sink": statistics(one_hot), "stuck": statistics(frozen), "lively": statistics(lively)}, loss
        )
    lines = [line for line, _ in said]
    assert lines == [
        "attention collapse: sink: one-hot (max weight 1.000, on the same key for most queries), "
        "2 validations in a row, while val/loss fell from 1 to 0.8",
        "attention collapse: stuck: frozen (Kendall tau 1.000 between validations, unchanged since validation 0), "
        "2 validations in a row, while val/loss fell from 1 to 0.6",
    ]
    assert [title for _, title in said] == ["attention collapse: sink one_hot", "attention collapse: stuck frozen"]


def test_no_collapse_is_told_while_the_loss_does_not_fall_or_after_an_early_start():
    uniform = torch.full((2, 1, 4, 4), 0.25)
    monitor = AttentionCollapse()
    assert all(not monitor.observe({"flat": statistics(uniform)}, loss) for loss in (1.0, 1.0, 1.2))
    late = AttentionCollapse(frozen_from=1)
    torch.manual_seed(0)
    rows = [torch.rand(2, 1, 4, 4).softmax(-1) for _ in range(3)] + [torch.rand(2, 1, 4, 4).softmax(-1)] * 3
    said = [late.observe({"late": statistics(r)}, 1.0 - 0.1 * k) for k, r in enumerate(rows)]
    assert not any(said)  # its maps stopped changing at validation 3: converged, not frozen from the start


def test_the_monitor_without_a_loss_says_so_once_and_alerts_wandb(caplog, tmp_path):
    alerts = []

    class Recorded(WandbLogger):
        @property
        def experiment(self):
            return SimpleNamespace(alert=lambda **kwargs: alerts.append(kwargs))

    trainer = SimpleNamespace(is_global_zero=True, loggers=[Recorded(save_dir=str(tmp_path), offline=True)])
    with caplog.at_level(logging.WARNING, logger=LOG):
        AttentionCollapse.say(trainer, "attention collapse: x: uniform (...)", "attention collapse: x uniform")
    assert collapse_lines(caplog) == ["attention collapse: x: uniform (...)"]
    assert alerts[0]["title"] == "attention collapse: x uniform" and alerts[0]["text"].startswith(
        "attention collapse: x"
    )


def test_the_gold_mass_is_the_weight_on_the_gold_keys_of_the_scored_queries():
    weights = torch.tensor([[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]])  # (B, Q, K)
    gold = torch.tensor([[[True, False, True], [False, False, False]]])
    task = SimpleNamespace(
        gold_views=lambda model, batch: [
            GoldView("hop1", weights, gold, torch.ones(1, 1, 3, dtype=torch.bool), torch.tensor([[True, False]])),
            GoldView(
                "graded", weights, weights.double(), torch.ones(1, 1, 3, dtype=torch.bool), torch.tensor([[True, True]])
            ),
        ]
    )
    masses = attention_stats.gold_masses(torch.nn.Identity(), task, None)
    assert masses == {"attention/gold/hop1/mass": pytest.approx(0.8)}  # graded gold is no mass


def test_the_command_line_runs_the_statistics_and_the_monitor_by_default():
    small = ["--config", "domains/demo/demo.yaml", "--data.train_size=64", "--data.val_size=16", "--data.test_size=16"]
    callbacks = FrameworkCLI(small, run=False).trainer.callbacks
    stats = [c for c in callbacks if isinstance(c, AttentionStatistics)]
    monitor = [c for c in callbacks if isinstance(c, AttentionCollapse)]
    assert len(stats) == len(monitor) == 1 and stats[0].every_n_epochs == 1 and monitor[0].enabled
    off = FrameworkCLI(
        [*small, "--attention_stats.every_n_epochs=0", "--attention_collapse.enabled=false"], run=False
    ).trainer.callbacks
    assert not any(c.every_n_epochs for c in off if isinstance(c, AttentionStatistics))
    assert math.isclose(monitor[0].uniform_above, 0.995)


def test_evaluate_maps_reports_the_statistics_and_draws_the_probe_rows_of_every_block():
    from framework.evaluation.maps import map_rows

    torch.manual_seed(0)
    model = torch.nn.Sequential(create("non_local", 8), create("criss_cross", 8, recurrence=1)).eval()
    x = torch.randn(2, 8, 24, 32)  # 768 pixels, of which 64 probes take 7 x 9
    rows, pictures = map_rows(model, lambda: model(x), probes=64, top_k=5)
    with torch.no_grad(), capture(model, probes=64) as probed:
        model(x)
    for name, (record,) in probed.items():
        want = row_statistics(record).values()
        got = {row.measure: row.value for row in rows if row.block == name and row.setting.endswith(" probes")}
        assert got == pytest.approx({k: float(v.mean()) for k, v in want.items()})
    assert {row.measure for row in rows if row.block == "1"} >= {
        "lse",
        "max_logit",
        "top5_mass",
    }  # criss-cross's kernel lse
    assert set(pictures) == {"maps/0", "maps/1"}
