"""``python -m framework compare``: the grid, the runs (real fits and tests in warm workers), resuming,
the tables against the runs' own summary.json, the statistics, submitit, the W&B sweep. The pool's
crash isolation is in test_compare_pool.py, --cells and --verify in test_compare_cells.py, --search in
test_compare_search.py, preemption (SLURM, submitit) in test_preemption.py."""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

import pytest
import yaml

from framework.__main__ import main
from framework.commands.compare import agent, grid, results, runner
from framework.commands.compare import main as compare_main
from framework.errors import ConfigError
from framework.runs import read_summary, write_json_atomically
from tests.comparisons import DEMO, compare, folder

GRID = ["--grid", "model.attention=[mhsa,none]"]


# -- the grid ------------------------------------------------------------------------------------


def test_grid_values_are_yaml_lists_and_several_keys_make_the_product():
    axes = grid.parse_grid(
        ["model.attention=[criss_cross, danet,none]", "optimizer.init_args.lr=[0.01,1.0e-3]", "model.depth=2"]
    )
    assert axes[0].values == ("criss_cross", "danet", "none") and axes[1].values == (0.01, 0.001)
    assert axes[2].values == (2,)
    cells = grid.cells(axes)
    assert len(cells) == 6  # 3 x 2 x 1, the first key slowest
    assert [c.values["model.attention"] for c in cells[:2]] == ["criss_cross", "criss_cross"]
    assert cells[0].args == ["--model.attention=criss_cross", "--optimizer.init_args.lr=0.01", "--model.depth=2"]
    assert cells[1].name == "attention=criss_cross,lr=0.001,depth=2"
    assert len({c.name for c in cells}) == 6


def test_grid_quoting_specs_and_config_files():
    spec = '{"class_path": "my.Block", "init_args": {"k": 3}}'
    (axis,) = grid.parse_grid([f"model.attention=['{spec}', 'a,b', none]"])
    assert axis.values == (spec, "a,b", "none")
    cells = grid.cells([axis])
    assert cells[0].args == [f"--model.attention={spec}"] and cells[1].label == "a,b"
    assert all("/" not in c.name and '"' not in c.name for c in cells)  # folder names stay plain
    (configs,) = grid.parse_grid(["config=[domains/graph/gat_cora.yaml,domains/graph/gcn_cora.yaml]"])
    cell = grid.cells([configs])[1]
    assert (
        cell.label == "gcn_cora" and cell.config_args == ["--config", "domains/graph/gcn_cora.yaml"] and not cell.args
    )
    assert grid.cells([])[0].name == "default"


@pytest.mark.parametrize(
    "flag, message",
    [
        ("model.attention=[]", "--grid model.attention: the list of values is empty"),
        ("model.attention=", "--grid model.attention: no values given"),
        ("model.attention", "expected KEY=[value,value,...]"),
        ("model attention=[a]", "is not a config key"),
        ("model.attention=[a, [b]", "not a YAML list"),
        ("model.attention=[a,a]", "a listed more than once"),
        ("seed_everything=[1,2]", "use --seeds"),
        ("config=[no/such.yaml]", "--grid config: no/such.yaml: no such config file"),
    ],
)
def test_bad_grid_flags_are_one_message_naming_the_flag(flag, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        grid.parse_grid([flag])


# -- statistics on hand-made numbers -------------------------------------------------------------


def test_the_paired_test_is_scipys_ttest_rel_over_the_shared_seeds():
    from scipy import stats

    cell = {0: 0.81, 1: 0.84, 2: 0.80, 3: 0.86, 5: 0.99}
    base = {0: 0.78, 1: 0.80, 2: 0.79, 3: 0.81, 4: 0.10}
    test = results.paired_test(cell, base)
    expected = stats.ttest_rel([0.81, 0.84, 0.80, 0.86], [0.78, 0.80, 0.79, 0.81])
    assert test.n == 4 and test.p == pytest.approx(expected.pvalue) and test.t == pytest.approx(expected.statistic)
    assert test.delta == pytest.approx(statistics.fmean([0.03, 0.04, 0.01, 0.05]))
    single = results.paired_test({0: 1.0}, {0: 0.5})
    assert single.n == 1 and math.isnan(single.p)
    assert results.mean_std([1.0, 2.0, 4.0]) == pytest.approx((7 / 3, statistics.stdev([1.0, 2.0, 4.0])))


def _record(seed: int, best: float, train_error: float, test_acc: float, mode: str = "max") -> results.Record:
    cell = grid.cells([])[0]
    fit = {
        "status": "finished",
        "monitor": "val/acc",
        "mode": mode,
        "best_score": best,
        "train_history": [
            {"epoch": 0, "train/error": 0.9, "train/loss": 2.0},
            {"epoch": 1, "train/error": train_error, "train/loss": 1.0 + seed},
        ],
    }
    return results.Record(cell, seed, Path("."), fit, {"status": "finished", "metrics": {"test/acc": test_acc}})


def test_best_of_n_by_validation_and_by_final_training_error():
    runs = [
        _record(0, 0.70, 0.20, 0.69),
        _record(1, 0.90, 0.30, 0.80),
        _record(2, 0.90, 0.05, 0.85),
        _record(3, 0.60, 0.10, 0.95),
    ]
    assert results.best_by_validation(runs).seed == 1  # 0.90 twice: the lower seed
    assert results.best_by_training(runs, "train/error").seed == 2
    assert results.best_by_training(runs, "train/loss").seed == 0
    assert results.training_metric(runs) == "train/error"
    losses = [_record(s, 2.0 - s, 0.1, 0.5, mode="min") for s in range(3)]
    assert results.best_by_validation(losses).seed == 2  # the checkpoint metric is a loss: lowest wins


# -- a real comparison ---------------------------------------------------------------------------


def _runs_of(name: str) -> list[Path]:
    return sorted(folder(name).glob("runs/*/seed*"))


@pytest.mark.slow
def test_a_comparison_runs_writes_the_tables_and_resumes(capsys):
    summary = compare(*GRID, "--seeds", "2", "--jobs", "2", "--baseline", "none", "--name", "demo2x2")
    where = folder("demo2x2")
    runs = _runs_of("demo2x2")
    assert [f"{r.parent.name}/{r.name}" for r in runs] == [
        "attention=mhsa/seed0",
        "attention=mhsa/seed1",
        "attention=none/seed0",
        "attention=none/seed1",
    ]
    for run in runs:  # every run has the usual folder, a fit summary and a test of its best checkpoint
        fit, test = read_summary(run)["fit"], read_summary(run / "test")["test"]
        assert fit["status"] == "finished" and fit["epochs"] == 2 and len(fit["history"]) == 2
        assert len(fit["train_history"]) == 2 and fit["seconds_per_epoch"] > 0 and fit["peak_memory_mb"] > 0
        assert fit["monitor"] == "val/acc" and fit["seed"] == int(run.name[4:])
        assert test["ckpt_path"] == str(run / "checkpoints" / "best.ckpt") and "test/acc" in test["metrics"]
        assert (run / "config.yaml").is_file() and (run / "fit.log").is_file()

    # The table's figures are the runs' own summary.json figures.
    rows = {row["cell"]: row for row in csv.DictReader((where / "results.csv").open())}
    assert set(rows) == {"mhsa", "none"}
    for cell in ("mhsa", "none"):
        accs = [read_summary(r / "test")["test"]["metrics"]["test/acc"] for r in runs if r.parent.name.endswith(cell)]
        speed = [read_summary(r)["fit"]["seconds_per_epoch"] for r in runs if r.parent.name.endswith(cell)]
        assert float(rows[cell]["test/acc_mean"]) == pytest.approx(statistics.fmean(accs))
        assert float(rows[cell]["test/acc_std"]) == pytest.approx(statistics.stdev(accs))
        assert float(rows[cell]["seconds_per_epoch_mean"]) == pytest.approx(statistics.fmean(speed))
        assert rows[cell]["n"] == "2"
    assert rows["mhsa"]["baseline"] == "none" and rows["mhsa"]["n_paired"] == "2"
    md = (where / "results.md").read_text()
    assert "| mhsa | 2 |" in md and "none (baseline)" in md and "p (paired t, n)" in md and "Best of N" in md
    assert (where / "metric.png").stat().st_size > 1000 and (where / "curves.png").stat().st_size > 1000
    assert json.loads((where / "spec.json").read_text())["grid"] == [
        {"key": "model.attention", "values": ["mhsa", "none"]}
    ]
    assert summary.metric == "test/acc" and len(list(csv.DictReader((where / "runs.csv").open()))) == 4
    assert "| mhsa | 2 |" in capsys.readouterr().out

    # A failed run starts again, a killed one resumes from last.ckpt, a missing test is run; nothing else reruns.
    failed, killed, untested, untouched = runs
    for run, status in ((failed, "failed"), (killed, "running")):
        content = read_summary(run)
        content["fit"]["status"] = status
        write_json_atomically(run / "summary.json", content)
    (untested / "test" / "summary.json").unlink()
    assert [runner.state(r) for r in runs] == ["fit", "resume", "test", "done"]
    partial = compare(*GRID, "--seeds", "2", "--baseline", "none", "--name", "demo2x2", "--report")
    assert len(partial.missing) == 3 and [r.seed for r in partial.records["attention=none"]] == [1]
    assert "3 run(s) not finished" in capsys.readouterr().err
    stamp = (untouched / "summary.json").stat().st_mtime_ns
    compare(*GRID, "--seeds", "2", "--jobs", "2", "--baseline", "none", "--name", "demo2x2")
    out = capsys.readouterr().out
    assert "4 runs, 1 finished already; running 3" in out
    assert "mhsa seed 0: fit+test" in out and "mhsa seed 1: resume+test" in out and "none seed 0: test in" in out
    assert "--ckpt_path" in (killed / "fit.log").read_text()
    assert (untouched / "summary.json").stat().st_mtime_ns == stamp
    assert all(runner.state(r) == "done" for r in runs)

    compare(*GRID, "--seeds", "2", "--name", "demo2x2")  # everything finished: nothing runs
    assert "4 finished already; running 0" in capsys.readouterr().out

    # Another grid in the same folder is refused, naming the difference (new values of its keys join it:
    # tests/test_compare_study.py).
    with pytest.raises(ConfigError, match=r"was made with no --grid model.dim; here it is \[16\]"):
        compare("--grid", "model.attention=[mhsa,local]", "--grid", "model.dim=[16]", "--name", "demo2x2")
    with pytest.raises(ConfigError, match="run arguments"):
        compare(*GRID, "--trainer.max_epochs=3", "--name", "demo2x2")


def test_comparison_errors_name_the_flag(capsys):
    with pytest.raises(ConfigError, match="--grid model.attentio: the config has no key model.attentio"):
        compare("--grid", "model.attentio=[mhsa,none]")
    with pytest.raises(ConfigError, match="--grid model.attention: .*unknown sequence block 'mhsaa'"):
        compare("--grid", "model.attention=[mhsa,mhsaa]")
    with pytest.raises(SystemExit) as stop:
        compare(*GRID, "--seeds", "0")
    assert stop.value.code == 2 and "error: argument --seeds: expected an int >= 1, got '0'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--baseline cbam: no such cell; the cells are mhsa, none"):
        compare(*GRID, "--baseline", "cbam")
    with pytest.raises(ConfigError, match="--run_dir: set by compare"):
        compare(*GRID, "--run_dir=x")
    with pytest.raises(ConfigError, match="compare needs a config"):
        compare_main(GRID)
    assert not folder("demo-attention").exists()  # nothing ran, no folder left


def test_the_command_line_prints_one_line_for_a_bad_flag(capsys, monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")
    with pytest.raises(SystemExit) as stop:
        main(["compare", *DEMO, "--grid", "model.attention=[]"])  # through the CLI's dispatch
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --grid model.attention: the list of values is empty") and "Traceback" not in err


# -- beyond one machine --------------------------------------------------------------------------


@pytest.mark.slow
def test_the_submitit_local_executor_runs_a_small_grid(capsys):
    pytest.importorskip("submitit")
    summary = compare(
        *GRID,
        "--executor",
        "submitit",
        "--submitit",
        "cluster=local",
        "--submitit",
        "timeout_min=10",
        "--jobs",
        "2",
        "--name",
        "demo_submitit",
    )
    assert [row["n"] for row in summary.rows] == [1, 1]
    assert all(runner.state(r) == "done" for r in _runs_of("demo_submitit"))
    assert any(folder("demo_submitit").glob("submitit/*/*_result.pkl"))


def test_the_sweep_definition_is_a_wandb_grid_sweep_of_the_comparison():
    compare(*GRID, "--seeds", "3", "--name", "demo_sweep", "--sweep")
    sweep = yaml.safe_load((folder("demo_sweep") / "sweep.yaml").read_text())
    assert sweep["method"] == "grid" and sweep["name"] == "demo_sweep"
    assert sweep["parameters"] == {
        "model.attention": {"values": ["mhsa", "none"]},
        "seed_everything": {"values": [0, 1, 2]},
    }
    command = sweep["command"]
    assert (
        command[:4] == ["${env}", "${interpreter}", "-m", "framework.commands.compare.agent"]
        and command[-1] == "${args}"
    )
    assert command[command.index("--") + 1 : -1] == DEMO
    assert command[command.index("--grid_keys") + 1] == "model.attention"
    assert not _runs_of("demo_sweep")  # the sweep's runs are the agents' to do
    # What an agent passes (${args}) picks the cell and the seed; the run folder is compare's.
    run_args, values, seed = agent.split([*DEMO, "--model.attention=none", "--seed_everything=2"], ["model.attention"])
    assert run_args == DEMO and values == {"model.attention": "none"} and seed == 2


def test_the_comparison_is_logged_to_wandb_offline_without_a_key(tmp_path):
    from framework.commands.compare import plots

    records = {"default": [_record(0, 0.7, 0.2, 0.69), _record(1, 0.9, 0.3, 0.80)]}
    summary = results.summarize("hand_made", grid.cells([]), records, [], [0, 1], [])
    paths = results.write(summary, tmp_path)
    images = plots.plot(summary, tmp_path)
    assert [p.name for p in images] == ["metric.png", "curves.png"]
    where = plots.log_to_wandb(summary, tmp_path, "attention-framework", "hand_made", images, paths["results.csv"])
    run = next((tmp_path / "wandb").glob("offline-run-*compare-hand_made"))
    assert str(run) in where and any(run.glob("*.wandb"))


# -- failures, the live status, Ctrl-C -------------------------------------------------------------


def test_a_failed_stage_is_explained_from_its_log(capsys):
    said = "Seed set to 0\nerror: data.batch_size must be at least 1, got 0\n(set FRAMEWORK_TRACEBACK=1 ...)\n"
    assert runner.failure("fit", 1, said) == ("fit: data.batch_size must be at least 1, got 0", False)
    crashed = (
        'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n    f()\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "wandb: You can sync this run to the cloud by running:\nwandb: wandb sync runs/x\n"
    )
    assert runner.failure("test", 1, crashed) == (
        "test: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        False,
    )
    assert runner.failure("fit", 143, "stopped by SIGTERM; resume it with ...") == ("fit stopped by SIGTERM", True)
    assert runner.failure("fit", -9, "") == ("fit stopped by SIGKILL", True)
    assert runner.failure("fit", -11, "Fatal Python error: Segmentation fault") == ("fit crashed: SIGSEGV", False)
    assert runner.failure("fit", 3, "something odd\n") == ("fit exit status 3: something odd", False)
    from framework.commands.compare.command import explain_failures

    explain_failures(
        [runner.RunResult("a/seed0", False, "fit", error="fit stopped by SIGKILL", log="a.log", retry=True)],
        ["a/seed0"],
    )
    err = capsys.readouterr().err
    assert "  a/seed0: fit stopped by SIGKILL (log: a.log)" in err and "run the same command again to resume" in err
    assert "a rerun does not change" not in err


def test_the_status_line_counts_runs_names_epochs_and_projects_the_end(tmp_path, monkeypatch):
    from framework.commands.compare import grid_status as progress

    plans = [
        runner.RunPlan(cell=f"c{i}", label=f"c{i}", seed=0, run_dir=str(tmp_path / f"c{i}"), fit_args=[], test_args=[])
        for i in range(4)
    ]
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    with progress.GridProgress(len(plans), {"c0": 10, "c1": 10, "c2": 10, "c3": 10}, every=0) as status:
        status.started(plans[0])
        assert status.describe() == "0/4 runs done · running: c0 seed 0 epoch 1/10 · ETA after the first epoch"
        clock[0] = 130.0
        write_json_atomically(
            Path(plans[0].run_dir) / "summary.json",
            {"fit": {"status": "running", "history": [{"epoch": 0}, {"epoch": 1}, {"epoch": 2}]}},
        )
        # 3 epochs in 30 s: 7 epochs left of c0 (70 s) and 3 runs of 10 epochs (300 s), one at a time
        assert status.describe() == "0/4 runs done · running: c0 seed 0 epoch 4/10 · ETA 6 min"
        status.finished(plans[0], runner.RunResult(plans[0].key, True, "fit+test", seconds=120.0))
        status.started(plans[1])
        status.started(plans[2])
        clock[0] = 160.0  # c1, c2 before their first validation: the median run (120 s) less 30 s each
        assert status.describe() == (
            "1/4 runs done · running: c1 seed 0 epoch 1/10, c2 seed 0 epoch 1/10 · ETA 4 min"
        )  # 2 runs seen at once: c3 (120 s) starts when c1 or c2 ends (90 s): 210 s
        status.finished(plans[1], runner.RunResult(plans[1].key, False, "fit", error="fit: bad", log="x/fit.log"))
        assert status.describe().startswith("2/4 runs done (1 failed) · running: c2 seed 0")
    assert progress.duration(42) == "42 s" and progress.duration(5400) == "1 h 30 min"


def test_the_eta_counts_the_executors_slots_not_a_worker_that_starts_before_its_last_run_is_told(tmp_path, monkeypatch):
    """A local pool's worker starts its next run before the main thread tells the end of its last
    one: three runs are seen at once on two slots. The ETA hands the runs not started to the slot
    that frees first, on the executor's two slots."""
    from framework.commands.compare import grid_status as progress

    plans = [
        runner.RunPlan(cell=f"c{i}", label=f"c{i}", seed=0, run_dir=str(tmp_path / f"c{i}"), fit_args=[], test_args=[])
        for i in range(8)
    ]
    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    for told in (False, True):
        clock[0] = 0.0
        status = progress.GridProgress(len(plans), dict.fromkeys([p.cell for p in plans], 10), every=0)
        if told:
            status.at_once(2)
        status.started(plans[0])
        status.started(plans[1])
        clock[0] = 100.0
        status.started(plans[2])  # plans[0]'s worker, ahead of its finished()
        status.finished(plans[0], runner.RunResult(plans[0].key, True, "fit+test", seconds=100.0))
        # c1 and c2 before their first validation, the median run 100 s: 0 s and 100 s left; the 5 runs
        # not started (100 s each) go to the slot that frees first: on 2 slots 300 s, on 3 (seen) 200 s
        assert status.describe().endswith("ETA 5 min" if told else "ETA 3 min"), (told, status.describe())
        status.close()


def test_on_a_terminal_the_status_is_redrawn_in_place_below_the_lines():
    import io

    from framework.commands.status_line import StatusLine

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    with StatusLine(lambda: "1/2 runs done · ETA 5 s", total=2, stream=screen) as status:
        status.refresh()
        status.print("[1/2] mhsa seed 0: fit+test in 3 s")
        status.advance()
        status.refresh()
    drawn = screen.getvalue()
    assert (
        "\r|######      | 1/2 runs done · ETA 5 s" in drawn
        and "\n[1/2] mhsa seed 0: fit+test in 3 s\n" in drawn.replace("\r", "\n")
    )
    logged = io.StringIO()
    with StatusLine(lambda: "0/2 runs done", total=2, every=0, stream=logged) as status:
        status.refresh()
        status.print("a line")
    assert logged.getvalue() == "0/2 runs done\na line\n"  # no carriage returns in a log


@pytest.mark.slow
def test_a_cell_that_cannot_run_says_why_while_the_status_shows_the_grid(capsys, monkeypatch):
    monkeypatch.delenv("FRAMEWORK_TRACEBACK")  # the runs print their one-line error, as for a user
    with pytest.raises(SystemExit) as stop:
        compare("--grid", "data.max_pairs=[40,8]", "--name", "demo_bad", "--status_every", "0.5")
    assert stop.value.code == 1
    out, err = capsys.readouterr()
    assert "running: 40 seed 0 epoch 1/2" in out and "running: 8 seed 0" in out and "ETA" in out
    assert "[1/2] 40 seed 0: FAILED: fit: " in out and "[2/2] 8 seed 0: fit+test in" in out
    reason = err.split("max_pairs=40/seed0: ", 1)[1].splitlines()[0]
    assert "data: need 1 <= min_pairs <= max_pairs <= num_keys" in reason and "fit.log" in reason
    assert "failed for a reason a rerun does not change" in err and "run the same command again to resume" not in err
    assert "| 8 | 1 |" in out  # the table of what finished


@pytest.mark.slow
def test_ctrl_c_stops_the_grid_prints_the_partial_table_and_the_same_command_resumes():
    import signal
    import subprocess
    import sys
    import time

    args = [*DEMO, "--grid", "trainer.max_epochs=[1,10]", "--name", "demo_stop"]  # the second is long enough to stop
    command = [sys.executable, "-m", "framework", "compare", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = []
    for line in process.stdout:  # the first run ends, the second one's fit has validated once
        first.append(line)
        if line.startswith("[1/2]"):
            break
    second = folder("demo_stop") / "runs" / "max_epochs=10" / "seed0"
    while not read_summary(second).get("fit", {}).get("history") and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    out = "".join(first) + out
    assert process.returncode == 130, out + err
    assert (
        "1 run(s) done, 0 failed, 1 stopped, 0 not started" in out
        and "10 seed 0: fit stopped by SIGTERM; the same" in out
    )
    assert "| 1 (baseline) | 1 |" in out and "Not finished (1): max_epochs=10/seed0" in out
    assert "run the same command again" in err
    assert runner.state(second) == "resume" and read_summary(second)["fit"]["status"] == "interrupted"
    done = folder("demo_stop") / "runs" / "max_epochs=1" / "seed0" / "summary.json"
    stamp = done.stat().st_mtime_ns
    summary = compare_main(args)
    assert [row["n"] for row in summary.rows] == [1, 1] and done.stat().st_mtime_ns == stamp
    assert "--ckpt_path" in (second / "fit.log").read_text().split("\n$ ")[-1]  # the second attempt resumed
