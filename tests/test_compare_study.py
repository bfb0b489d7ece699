"""``compare`` as a long study needs it: the threads the user chose, new cells added to a finished
comparison, an ETA that follows early stopping, a search that says what it does, and
``--early_stopping.*`` flags (framework/commands/compare/, framework/commands/fit/)."""

from __future__ import annotations

import pytest

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
    with pytest.raises(ConfigError, match="another resolved config for the cell mhsa"):
        check_resumable(changed)


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
    assert (run / "summary.json").stat().st_mtime_ns == stamp  # the finished cell was not run again
    added = folder("grow") / "runs" / "attention=local" / "seed0"
    assert read_summary(added)["fit"]["provenance"]["numerics"]["threads"] == 1  # the exported OMP_NUM_THREADS
    assert set(summary.records) == {"attention=none", "attention=local"} and not summary.missing
