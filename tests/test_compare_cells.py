"""``compare --cells`` (cells listed one by one beside the product grid) and ``compare --verify``
(a recorded run done again and its test metrics set beside the record)."""

from __future__ import annotations

import pytest
import yaml

from framework.commands.compare import grid, verify
from framework.errors import ConfigError
from tests.comparisons import compare, folder

CELLS = ["--cells", "mhsa: --model.attention=mhsa", "small: --model.attention=none --model.dim=16"]


def test_listed_cells_are_names_and_flags_crossed_with_the_grid(tmp_path):
    listed = grid.parse_cells(
        [
            "base: --config domains/demo/demo.yaml --model.attention=none",
            "wide: --model.dim=64 -c configs/logger/csv.yaml",
        ]
    )
    cells = grid.cells([listed, grid.parse_axis("optimizer.init_args.lr=[0.1,0.01]")])
    assert [c.name for c in cells] == ["base,lr=0.1", "base,lr=0.01", "wide,lr=0.1", "wide,lr=0.01"]
    assert cells[0].config_args == ["--config", "domains/demo/demo.yaml"]
    assert cells[0].args == ["--model.attention=none", "--optimizer.init_args.lr=0.1"]
    assert cells[3].config_args == ["--config", "configs/logger/csv.yaml"]
    assert cells[3].args == ["--model.dim=64", "--optimizer.init_args.lr=0.01"]
    file = tmp_path / "cells.yaml"
    file.write_text(yaml.safe_dump({"a": "--model.dim=8", "b": ["--model.attention=none"]}))
    assert grid.parse_cells([str(file)]).flags == (("--model.dim=8",), ("--model.attention=none",))
    assert grid.parse_cells([]) is None


@pytest.mark.parametrize(
    "items, message",
    [
        (["just flags"], "expected 'NAME: FLAGS'"),
        (["a: --model.dim=8", "a: --model.dim=16"], "a: listed more than once"),
        ([": --model.dim=8"], "a cell needs a name"),
        (["a: --seed_everything=3"], "--seed_everything is set by compare"),
        (["a: --model.dim='8"], "in its flags"),
    ],
)
def test_bad_cells_are_one_message_naming_the_cell(items, message):
    with pytest.raises(ConfigError, match=message):
        grid.parse_cells(items)


@pytest.mark.slow
def test_listed_cells_run_with_their_flags_and_a_recorded_run_verifies_exactly(capsys):
    summary = compare(*CELLS, "--trainer.deterministic=true", "--trainer.max_epochs=1", "--name", "cells")
    assert [cell.label for cell in summary.cells] == ["mhsa", "small"]
    runs = folder("cells") / "runs"
    small = yaml.safe_load((runs / "small" / "seed0" / "config.yaml").read_text())["model"]["init_args"]
    assert (small["attention"], small["dim"]) == ("none", 16)
    with pytest.raises(ConfigError, match="--cells mhsa: .* has a cell mhsa with the flags"):  # its flags changed
        compare(
            "--cells",
            "mhsa: --model.attention=local",
            "--trainer.deterministic=true",
            "--trainer.max_epochs=1",
            "--name",
            "cells",
        )
    capsys.readouterr()

    # The deterministic run of mhsa, done again in a fresh worker: exactly the recorded test metrics.
    assert (
        compare(
            *CELLS,
            "--trainer.deterministic=true",
            "--trainer.max_epochs=1",
            "--name",
            "cells",
            "--verify",
            "mhsa",
            "--seed",
            "0",
        )
        is None
    )
    said = capsys.readouterr().out
    assert "MATCH (deterministic on the same device and numerics: the test metrics must be equal)" in said
    assert "config_hash: same" in said and "versions: same" in said and "numerics: same" in said
    assert not (folder("cells") / "verify").exists()  # a matching rerun is not kept
    with pytest.raises(ConfigError, match="--verify nothing: no such cell; the cells are mhsa, small"):
        compare(
            *CELLS, "--trainer.deterministic=true", "--trainer.max_epochs=1", "--name", "cells", "--verify", "nothing"
        )


def test_the_verdict_is_exact_for_deterministic_runs_on_one_device_else_within_the_tolerance():
    fit = {"monitor": "val/acc", "provenance": {"deterministic": True, "device": "cpu (x86_64, 1 threads)"}}
    test = {"metrics": {"test/acc": 0.5, "test/loss": 1.0}}
    close = {"metrics": {"test/acc": 0.5, "test/loss": 1.0 + 1e-6}}
    exact = verify.compare(fit, test, fit, close, None, 1e-3)
    assert not exact["match"] and exact["exact"] and exact["metric"] == "test/acc"
    elsewhere = {**fit, "provenance": {"deterministic": True, "device": "NVIDIA H100"}}
    within = verify.compare(fit, test, elsewhere, close, None, 1e-3)
    assert within["match"] and not within["exact"] and within["tolerance"] == 1e-3
    assert not verify.compare(fit, test, elsewhere, {"metrics": {"test/acc": 0.6, "test/loss": 1.0}}, None, 1e-3)[
        "match"
    ]
    assert "MISMATCH" in verify.report(exact) and "device: DIFFERENT" in verify.report(within)
    assert (
        verify.recorded_threads(fit["provenance"]) == 1 and verify.recorded_threads({"device": "NVIDIA H100"}) is None
    )


def test_the_verify_report_names_the_part_of_the_provenance_that_differs():
    numerics = {"threads": 1, "cpu_capability": "AVX2", "precision": "32-true"}
    record = {"deterministic": True, "device": "cpu", "seed": 0, "numerics": numerics, "versions": {"torch": "2.1"}}
    fit = {"monitor": "val/acc", "provenance": record}
    test = {"metrics": {"test/acc": 0.5}}
    more_threads = {**fit, "provenance": {**record, "numerics": {**numerics, "threads": 2}}}
    found = verify.compare(fit, test, more_threads, {"metrics": {"test/acc": 0.51}}, None, 1e-3)
    said = verify.report(found)
    assert not found["exact"] and not found["match"] and found["differing"] == ["numerics"]
    assert "numerics: DIFFERENT (threads 1 -> 2)" in said and "what differs: numerics" in said
    assert verify.recorded_threads(more_threads["provenance"]) == 2
    newer = {**fit, "provenance": {**record, "versions": {"torch": "2.2"}}}
    found = verify.compare(fit, test, newer, {"metrics": {"test/acc": 0.51}}, None, 1e-3)
    assert found["exact"] and found["differing"] == ["versions"]
    assert "versions: DIFFERENT (torch '2.1' -> '2.2')" in verify.report(found)
    same = verify.compare(fit, test, fit, {"metrics": {"test/acc": 0.51}}, None, 1e-3)
    assert "what differs: nothing recorded" in verify.report(same)


def test_the_provenance_record_carries_the_numerics_that_decide_a_runs_numbers():
    import torch

    from framework import provenance

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        record = provenance.numerics("32-true")
    finally:
        torch.set_num_threads(threads)
    assert record["threads"] == 1 and record["precision"] == "32-true"
    assert record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert {"float32_matmul_precision", "cuda_matmul_tf32", "cudnn_benchmark", "cublas_workspace"} <= set(record)
