"""``compare`` as a long study needs it: the threads the user chose, new cells added to a finished
comparison, an ETA that follows early stopping, a search that says what it does, and
``--early_stopping.*`` flags (framework/commands/compare/, framework/commands/fit/)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from framework.__main__ import main
from framework.commands.compare import executors
from framework.commands.compare.comparison import Spec, check_resumable, extend, load
from framework.commands.compare.grid import parse_cells, parse_grid
from framework.errors import ConfigError
from framework.runs import read_summary
from tests.comparisons import compare, folder


def test_a_runs_threads_are_the_flag_then_the_exported_omp_num_threads_then_the_cores_shared(monkeypatch):
    monkeypatch.setattr(executors, "cpu_count", lambda: 8)
    monkeypatch.delenv(executors.THREADS_ENV, raising=False)
    assert executors.threads_per_run(2) == 4 and executors.threads_per_run(16) == 1
    monkeypatch.setenv(executors.THREADS_ENV, "1")
    assert executors.threads_per_run(2) == 1  # what the user exported, not cores // jobs
    assert executors.threads_per_run(2, given=3) == 3  # --threads first
    monkeypatch.setattr(executors, "free_gpus", lambda: [])
    assert executors.local_slots(2) == ([None, None], 1)
    monkeypatch.setenv(executors.THREADS_ENV, "two")
    with pytest.raises(ConfigError, match="OMP_NUM_THREADS='two': expected an int >= 1"):
        executors.threads_per_run(1)


def _spec(tmp_path, *grid: str, cells: tuple[str, ...] = ()) -> Spec:
    axes = ([parse_cells(list(cells))] if cells else []) + parse_grid(list(grid))
    return Spec(name="study", folder=tmp_path / "study", run_args=["--config", "demo.yaml"], axes=axes, seeds=[0])


def test_new_grid_values_and_cells_join_a_comparison_after_the_cells_it_has(tmp_path):
    first = _spec(tmp_path, "model.attention=[mhsa,none]", "model.dim=[16]")
    first.save()
    again = _spec(tmp_path, "model.attention=[local,mhsa]", "model.dim=[16,32]")
    added = extend(again)
    assert [c.label for c in again.cells] == [
        f"attention={a}, dim={d}" for a in ("mhsa", "none", "local") for d in (16, 32)
    ]  # the cells it had first, a value given only now last
    assert {c.label for c in added} == {"attention=mhsa, dim=32", "attention=none, dim=32"} | {
        "attention=local, dim=16",
        "attention=local, dim=32",
    }
    check_resumable(again)  # the joined comparison is this one, grown
    again.save()
    assert [g["values"] for g in load(again.folder)["grid"]] == [["mhsa", "none", "local"], [16, 32]]
    assert extend(_spec(tmp_path, "model.attention=[mhsa]", "model.dim=[16]")) == []  # a part of it: nothing new
    with pytest.raises(ConfigError, match="no --grid model.heads"):  # another key renames every cell: refused
        other = _spec(tmp_path, "model.attention=[mhsa]", "model.dim=[16]", "model.heads=[2]")
        extend(other)
        check_resumable(other)


def test_a_listed_cell_whose_flags_changed_under_its_name_is_refused_naming_it(tmp_path):
    _spec(tmp_path, cells=("mhsa: --model.attention=mhsa", "small: --model.dim=16")).save()
    grown = _spec(tmp_path, cells=("big: --model.dim=64",))
    assert [c.name for c in extend(grown)] == ["big"] and [c.name for c in grown.cells] == ["mhsa", "small", "big"]
    with pytest.raises(ConfigError, match="--cells small: .* a cell small with the flags '--model.dim=16', here "):
        extend(_spec(tmp_path, cells=("small: --model.dim=8",)))
    grown.resolved = {"mhsa": "a" * 16}
    grown.save()
    changed = _spec(tmp_path, cells=("mhsa: --model.attention=mhsa",))
    extend(changed)
    changed.resolved = {"mhsa": "b" * 16}  # a config file the cell reads has changed
    with pytest.raises(ConfigError, match=r"for the cell mhsa \(a config file it reads, or a default of the code"):
        check_resumable(changed)  # a comparison that kept no resolved configs: the change is not named
    grown.resolved_texts = {"mhsa": "model:\n  init_args:\n    widths: [8, 16]\n    heads: 2\n"}
    grown.save()
    changed.resolved_texts = {"mhsa": "model:\n  init_args:\n    widths: [8, 32]\n    stages: null\n"}
    with pytest.raises(ConfigError) as refused:
        check_resumable(changed)
    assert (
        "another resolved config for the cell mhsa (model.init_args.heads: 2 there, absent here; "
        "model.init_args.stages: absent there, null here; model.init_args.widths: [8, 16] there, [8, 32] here); "
        "a cell's config cannot change under its name"
    ) in str(refused.value)


@pytest.mark.slow
def test_rerunning_with_an_extra_grid_value_runs_only_the_new_cell_and_tables_all(capsys, monkeypatch):
    monkeypatch.setenv(executors.THREADS_ENV, "1")
    compare("--grid", "model.attention=[none]", "--trainer.max_epochs=1", "--name", "grow", "--threads", "2")
    run = folder("grow") / "runs" / "attention=none" / "seed0"
    stamp = (run / "summary.json").stat().st_mtime_ns
    assert read_summary(run)["fit"]["provenance"]["numerics"]["threads"] == 2  # --threads, not the exported 1
    capsys.readouterr()
    summary = compare("--grid", "model.attention=[none,local]", "--trainer.max_epochs=1", "--name", "grow")
    out = capsys.readouterr().out
    assert "2 cell(s) (1 new: local) x 1 seed(s) = 2 runs, 1 finished already; running 1" in out
    assert "1 warm worker(s), 1 torch thread(s) a run" in out
    assert (run / "summary.json").stat().st_mtime_ns == stamp  # the finished cell was not run again
    added = folder("grow") / "runs" / "attention=local" / "seed0"
    assert read_summary(added)["fit"]["provenance"]["numerics"]["threads"] == 1  # the exported OMP_NUM_THREADS
    assert set(summary.records) == {"attention=none", "attention=local"} and not summary.missing


def _printed(capsys, *flags: str) -> dict:
    with pytest.raises(SystemExit):
        main(["fit", "--config", "domains/demo/demo.yaml", *flags, "--print_config"])
    return yaml.safe_load(capsys.readouterr().out)


def test_one_early_stopping_argument_is_a_flag_whose_mode_follows_the_metric_direction_table(capsys, monkeypatch):
    assert _printed(capsys)["early_stopping"]["patience"] is None  # off by default
    stopping = _printed(capsys, "--early_stopping.patience=5")["early_stopping"]
    assert (stopping["monitor"], stopping["mode"], stopping["patience"]) == ("val/acc", "max", 5)  # the checkpoint's
    loss = _printed(capsys, "--early_stopping.patience=5", "--early_stopping.monitor=val/loss")["early_stopping"]
    assert loss["mode"] == "min"
    monkeypatch.delenv("FRAMEWORK_TRACEBACK", raising=False)
    for flags, said in (
        (
            ["--early_stopping.patience=5", "--early_stopping.mode=min"],
            "early_stopping.mode=min, but val/acc is better",
        ),
        (
            ["--early_stopping.patience=5", "--early_stopping.monitor=val/nothing"],
            "early_stopping.monitor=val/nothing:",
        ),
        (["--early_stopping.patience=-1"], "early_stopping.patience"),
        (["--early_stopping.min_delta=-0.1"], "early_stopping.min_delta"),
    ):
        with pytest.raises(SystemExit) as stop:
            main(["fit", "--config", "domains/demo/demo.yaml", *flags, "--print_config"])
        assert stop.value.code in (1, 2) and said in capsys.readouterr().err


def test_the_graph_configs_declare_their_early_stopping_as_the_section():
    for name in ("gat_cora", "gatv2_cora", "gcn_cora", "han_movielens"):
        config = yaml.safe_load(Path(f"domains/graph/{name}.yaml").read_text())
        assert config["early_stopping"] == {"monitor": "val/loss", "patience": 100}
        assert "callbacks" not in config["trainer"]  # --early_stopping.patience=N changes it alone


@pytest.mark.slow
def test_early_stopping_flags_reach_every_run_of_a_comparison():
    compare(
        "--grid",
        "model.attention=[none]",
        "--trainer.max_epochs=4",
        "--early_stopping.patience=0",
        "--early_stopping.stopping_threshold=0",  # val/acc >= 0 at the first validation: stop there
        "--name",
        "stops",
    )
    fit = read_summary(folder("stops") / "runs" / "attention=none" / "seed0")["fit"]
    assert fit["status"] == "finished" and fit["epochs"] == 1


def test_the_eta_follows_early_stopping_not_the_epoch_ceiling(tmp_path, monkeypatch):
    from framework.commands.compare import grid_status
    from framework.commands.compare.runner import RunPlan, RunResult
    from framework.runs import write_json_atomically

    plans = [
        RunPlan(cell=f"c{i}", label=f"c{i}", seed=0, run_dir=str(tmp_path / f"c{i}"), fit_args=[], test_args=[])
        for i in range(3)
    ]
    stopping = grid_status.Stopping.of({"early_stopping": {"monitor": "val/loss", "patience": 10}})
    assert stopping == grid_status.Stopping(10, "val/loss")
    callback = {"class_path": "lightning.pytorch.callbacks.EarlyStopping", "init_args": {"monitor": "val/loss"}}
    assert grid_status.Stopping.of({"trainer": {"callbacks": [callback]}}) == grid_status.Stopping(3, "val/loss")
    assert grid_status.Stopping.of({"early_stopping": {"patience": None}}) is None

    def fit(plan, losses, status="running", epochs=None):
        history = [{"epoch": e, "val/loss": loss} for e, loss in enumerate(losses)]
        summary = {"status": status, "history": history, "monitor": "val/acc", "directions": {"val/loss": "min"}}
        write_json_atomically(Path(plan.run_dir) / "summary.json", {"fit": {**summary, "epochs": epochs}})

    clock = [0.0]
    monkeypatch.setattr(grid_status.time, "monotonic", lambda: clock[0])
    cells = [plan.cell for plan in plans]
    status = grid_status.GridProgress(3, dict.fromkeys(cells, 1000), 0, dict.fromkeys(cells, stopping))
    without = grid_status.GridProgress(3, dict.fromkeys(cells, 1000), 0)
    for progress in (status, without):
        progress.started(plans[0])
    clock[0] = 30.0
    fit(plans[0], [1.0, 0.8, 0.7])  # 3 epochs in 30 s, the last one the best: it stops at 13 epochs at the earliest
    running = list(status.running.values())
    epochs = {plans[0].key: 3}
    assert status.expected_epochs(plans[0], 3) == 13
    assert status.eta(30.0, running, epochs) == pytest.approx(10 * 10 + 2 * 130)  # not 997 + 2 x 1000 epochs
    assert without.eta(30.0, running, epochs) == pytest.approx(9970 + 2 * 10000)
    fit(plans[0], [1.0, 0.8, 0.7] + [0.9] * 17, status="finished", epochs=20)
    status.finished(plans[0], RunResult(plans[0].key, True, "fit+test", seconds=200.0))
    status.started(plans[1])
    clock[0] = 50.0
    fit(plans[1], [1.0, 0.5])  # the finished fit trained 20 epochs: so is this one expected to
    assert status.expected_epochs(plans[1], 2) == 20
    fit(plans[1], [1.0 - 0.01 * e for e in range(22)])  # still improving after 22 epochs: 10 more at the least
    assert status.expected_epochs(plans[1], 22) == 22 + 10


def test_the_search_says_which_trials_are_random_draws_and_its_pruner_has_a_declared_warm_up():
    from framework.commands.compare import search
    from framework.commands.compare.pruning import PrunerSettings

    assert search.sampling(8, 10).startswith("all 8 trial(s) are random draws: TPE proposes once 10 have finished")
    assert search.sampling(20, 10) == "the first 10 trial(s) are random draws (--startup_trials), then TPE proposes"
    median = PrunerSettings.of("median", None, None, 40)
    assert (median.warmup, median.startup) == (10, 5)  # a quarter of max_epochs; Optuna's 5 startup trials
    pruner = median.build()
    assert (pruner._n_warmup_steps, pruner._n_startup_trials) == (10, 5)
    assert PrunerSettings.of("median", 2, 3, None).build()._n_warmup_steps == 2
    assert PrunerSettings.of("median", None, None, None).warmup == 1
    assert PrunerSettings.of("hyperband", 3, None, 20).build()._min_resource == 3
    assert PrunerSettings(**asdict(median)) == median  # what a worker's fit rebuilds it from
    with pytest.raises(ConfigError, match="--pruner_startup_trials: the hyperband pruner has no startup trials"):
        PrunerSettings.of("hyperband", None, 4, 20)
    with pytest.raises(ConfigError, match="--pruner none has none"):
        PrunerSettings.of("none", 2, None, 20)
    for flag in ("--pruner_warmup", "--startup_trials"):
        with pytest.raises(ConfigError, match=f"{flag} sets how a --search draws or prunes its trials"):
            compare("--grid", "model.attention=[none]", flag, "2")


def test_a_pruned_run_is_said_to_be_pruned_not_failed(tmp_path):
    from framework.commands.compare import grid_status
    from framework.commands.compare.runner import RunPlan, RunResult

    plan = RunPlan(cell="trial1", label="trial 1 [TPE]", seed=0, run_dir=str(tmp_path), fit_args=[], test_args=[])
    pruned = RunResult(plan.key, False, "fit", 12.0, "pruned: Trial was pruned at epoch 3.", pruned=True)
    assert grid_status.run_line(plan, pruned, 2, 4) == (
        "[2/4] trial 1 [TPE] seed 0: pruned after 12 s (Trial was pruned at epoch 3)"
    )
    status = grid_status.GridProgress(4, every=0)
    status.finished(plan, pruned)
    assert status.describe().startswith("1/4 runs done (1 pruned)")


def test_best_yaml_keeps_the_configs_epoch_budget_not_the_searchs_cut_one():
    from framework.commands.compare import search

    args = ["--config", "domains/demo/demo.yaml", "--trainer.max_epochs=2", "--trainer.max_steps", "50"]
    assert search.budget_flags(args) == [2, 3, 4]
    budget = search.configured_budget(args)
    assert budget["max_epochs"] == 8 and budget["max_steps"] == -1  # demo.yaml's, Lightning's default
    assert search.configured_budget(["--config", "domains/demo/demo.yaml"]) == {}
