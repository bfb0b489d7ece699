"""The atlas of attention (tools/atlas.py): its declaration is checked, docs/atlas.md is what
docs/atlas.csv gives, the quick atlas runs end to end and its tables render, a budget stops it."""

from __future__ import annotations

import csv

import pytest

from framework.attention import available
from framework.errors import ConfigError
from tests.conftest import ROOT
from tools import atlas
from tools.atlas_plan import DECLARATION, load
from tools.atlas_tables import COLUMNS, README_MARKS, in_readme, mark, read_csv, render, stale, total, write_csv

DOMAINS = {"demo", "nlp", "audio", "graph", "recommender", "memory", "vision"}


def test_the_declaration_covers_every_domain_with_a_baseline_first_and_registered_blocks():
    plan = load()
    assert {host.domain for host in plan.hosts} == DOMAINS
    assert plan.seeds >= 3
    for host in plan.hosts:
        assert 2 <= len(host.cells) <= 8, host.name
        assert "full" in host.flags, host.name
        for cell in host.cells:
            block = next((f.split("=", 1)[1] for f in cell.flags if f.startswith(f"--{host.key}=")), None)
            assert block is None or block == "none" or block in available(), (host.name, cell.name)
    assert all("none" in [c.name for c in h.cells[:1]] or h.domain == "graph" for h in plan.hosts)
    quick = plan.of("quick")
    assert quick and all(h.domain in ("demo", "graph") for h in quick)  # generated data: the same everywhere


def test_a_wrong_declaration_is_one_line_naming_the_host(tmp_path):
    text = DECLARATION.read_text().replace("cells: [none, mhsa, local,", "cells: [none, mhsaa, local,", 1)
    (tmp_path / "atlas.yaml").write_text(text)
    with pytest.raises(ConfigError, match="host recall: cell 'mhsaa' is no registered block"):
        load(tmp_path / "atlas.yaml")


def test_a_declaration_that_is_no_yaml_is_one_line_naming_the_line(tmp_path):
    text = DECLARATION.read_text().replace("task: associative recall (", "task: associative recall: (", 1)
    (tmp_path / "atlas.yaml").write_text(text)
    line = text.splitlines().index(next(t for t in text.splitlines() if "associative recall: (" in t)) + 1
    with pytest.raises(ConfigError, match=f"atlas.yaml is not valid YAML at line {line}, column"):
        load(tmp_path / "atlas.yaml")


def test_the_marks_say_the_side_and_the_level_of_significance():
    assert mark({"p": "0.004", "delta": "0.02"}) == "+**"
    assert mark({"p": "0.03", "delta": "-0.02"}) == "-*"
    assert mark({"p": "0.2", "delta": "0.02"}) == ""
    assert mark({"p": "", "delta": ""}) == ""


def test_docs_atlas_md_is_what_docs_atlas_csv_gives():
    assert not stale(load(), "full", ROOT / "docs" / "atlas.csv", ROOT / "docs" / "atlas.md", ROOT / "README.md"), (
        "docs/atlas.md or the README's summary is stale: run `python -m tools.atlas --report`"
    )


def test_a_spent_budget_runs_nothing_and_says_what_is_left(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FRAMEWORK_RUNS_DIR", str(tmp_path / "runs"))
    assert atlas.main(["--quick", "--budget", "0", "--out", str(tmp_path)]) == 0
    assert "not finished: recall, karate" in capsys.readouterr().out
    assert read_csv(tmp_path / "atlas.csv") == []
    assert "| demo | recall | - | 0 | not run yet |" in (tmp_path / "atlas.md").read_text()


@pytest.mark.slow
def test_the_quick_atlas_runs_every_quick_host_and_renders_its_tables(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FRAMEWORK_RUNS_DIR", str(tmp_path / "runs"))
    assert atlas.main(["--quick", "--out", str(tmp_path)]) == 0
    plan = load()
    rows = read_csv(tmp_path / "atlas.csv")
    assert [(r["host"], r["cell"]) for r in rows] == [(h.name, c.name) for h in plan.of("quick") for c in h.cells[:2]]
    for row in rows:
        assert row["n"] == "1" and float(row["mean"]) >= 0 and row["config_hash"], row
        assert float(row["seconds_per_epoch"]) > 0 and float(row["peak_memory_mb"]) > 0, row
    attended = [r for r in rows if r["baseline"] == "False"]
    assert all(r["ablation_drop"] != "" for r in attended), attended  # evaluate ran on every attention cell
    assert all(r["comprehensiveness"] != "" for r in attended)  # both quick hosts have items
    text = (tmp_path / "atlas.md").read_text()
    assert text == render(plan, "quick", rows) and "## Summary across domains" in text
    assert "| mhsa | " in text and "| gat | " in text
    assert atlas.main(["--quick", "--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "atlas.md").write_text(text.replace("mhsa", "MHSA"))
    assert atlas.main(["--quick", "--check", "--out", str(tmp_path)]) == 1
    # a second call runs nothing again: every run and evaluation is found finished
    capsys.readouterr()
    assert atlas.main(["--quick", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.count("finished already; running 0 ") == len(plan.of("quick"))


def test_the_csv_round_trips_through_the_table(tmp_path):
    row = dict.fromkeys(COLUMNS, "")
    row.update(budget="full", domain="graph", host="cora", cell="gat", kind="x", baseline="False", n="3", mean="0.8")
    write_csv([row], tmp_path / "atlas.csv")
    assert list(csv.DictReader((tmp_path / "atlas.csv").open())) == [row]
    assert "| gat | x | 3 | 0.800 |" in render(load(), "full", read_csv(tmp_path / "atlas.csv"))


def test_the_summary_totals_the_fit_time_of_the_hosts_that_say_theirs():
    plan = load()
    recall, trec, cora = (plan.host(name) for name in ("recall", "trec", "cora"))
    row = dict.fromkeys(COLUMNS, "")
    rows = {
        "recall": [dict(row, cell="none", fit_seconds="600"), dict(row, cell="mhsa", fit_seconds="1200")],
        "trec": [dict(row, cell="none", fit_seconds="5400")],
        "cora": [dict(row, cell="gcn")],  # measured before fit times were kept
    }
    assert total([recall, trec, cora], rows) == (
        "Fit time of the atlas: 120 minutes (2.0 hours) for 2 hosts; cora measured before fit times were kept, "
        "not counted."
    )


@pytest.mark.slow
def test_the_table_is_logged_to_wandb_offline(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)  # the atlas's default: offline unless WANDB_MODE=online
    row = dict.fromkeys(COLUMNS, "")
    row.update(budget="full", domain="graph", host="cora", cell="gat", n=3, mean=0.83)
    atlas.log_to_wandb([row], "atlas-test", tmp_path)
    tables = list(tmp_path.rglob("atlas_*.table.json"))
    assert len(tables) == 1 and '"gat"' in tables[0].read_text() and list(tmp_path.rglob("offline-run-*"))


def test_the_readme_holds_the_summary_between_its_marks_and_a_changed_one_is_stale(tmp_path):
    readme, docs = tmp_path / "README.md", ROOT / "docs"
    text = (ROOT / "README.md").read_text()
    end = README_MARKS[1]
    readme.write_text(text.replace("| graph | cora |", "| graph | Cora |", 1))
    assert stale(load(), "full", docs / "atlas.csv", docs / "atlas.md", readme)
    readme.write_text(in_readme(readme.read_text(), load(), read_csv(docs / "atlas.csv")))
    assert readme.read_text() == text
    with pytest.raises(ValueError, match="the README needs the lines"):
        in_readme(text.replace(end, ""), load(), [])


def test_a_host_begun_again_here_keeps_the_ledgers_rows_until_its_runs_count_as_many_seeds():
    kept = [{"cell": "none", "n": "3", "mean": "0.9"}, {"cell": "se", "n": "1", "mean": "0.8"}]
    here = [{"cell": "none", "n": 1, "mean": 0.7}, {"cell": "se", "n": 2, "mean": 0.85}, {"cell": "eca", "n": 0}]
    assert atlas.merged(here, kept) == [kept[0], here[1], here[2]]
    assert atlas.merged([], kept) == kept
