"""The registry and the catalogue: names, kinds, errors, and the README kept in step."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from jsonargparse import ArgumentParser

from framework.__main__ import main
from framework.attention import KINDS, ShapeError, UnknownBlockError, aliases, available, build, create, info
from framework.attention.spec import FeatureMapBlock, NoAttention
from framework.commands import blocks as catalogue
from tests.conftest import ROOT
from tools import sync_readme

BLOCK_TESTS = (ROOT / "tests" / "attention").glob("test_*.py")


def test_every_registered_block_is_named_in_a_block_test():
    """A block without a test against a reference formula is a defect: fail for it."""
    text = "\n".join(p.read_text() for p in BLOCK_TESTS)
    untested = [name for name in available() if f'"{name}"' not in text and f"'{name}'" not in text]
    assert not untested, (
        f"registered blocks with no test naming them: {untested}; test each against an independent formula "
        "(tests.attention.reference.assert_matches_reference) in the tests/attention/test_<family>.py of its kind "
        "or family, naming it (the generic checks of tests/attention/generic.py cover it already)"
    )


def test_catalogue_entries_are_complete():
    for name in available():
        entry = info(name)
        assert entry.kind in KINDS and entry.category and entry.paper, name
        assert entry.summary, f"{name}: the class needs a docstring"
    assert {info(n).kind for n in available()} == set(KINDS)


def test_unknown_names_list_the_close_ones():
    with pytest.raises(UnknownBlockError, match=r"unknown attention block 'cbma'; did you mean: cbam"):
        create("cbma", 8)
    with pytest.raises(ValueError, match=r"unknown feature_map block 'cris_cross'; did you mean: criss_cross"):
        build("cris_cross", 8, kind="feature_map")


def test_build_accepts_names_paths_specs_and_none_and_checks_the_kind():
    assert isinstance(build("none", 8), NoAttention)
    assert type(build("cbam", 16, kind="feature_map")).__name__ == "CBAM"
    assert type(build("timm.layers.EcaModule", 16)).__name__ == "EcaModule"
    assert type(build(lambda c: torch.nn.Conv2d(c, c, 1), 4)).__name__ == "Conv2d"
    with pytest.raises(ValueError, match="'mhsa' is a sequence block; this slot takes feature_map blocks: .*cbam"):
        build("mhsa", 16, kind="feature_map")
    with pytest.raises(ValueError, match="cannot import it"):
        build("no.such.Block", 16)


def test_none_is_the_baseline_of_its_slot_a_mean_in_a_pooling_slot():
    x, mask = torch.randn(2, 4, 3), torch.tensor([[True, True, False, False], [False] * 4])
    assert build("none", 3, kind="sequence")(x, mask) is x and build("none", 3, kind="feature_map")(x) is x
    pool = build("none", 3, kind="pooling")
    assert isinstance(pool, NoAttention)
    torch.testing.assert_close(pool(x, mask), torch.stack([x[0, :2].mean(0), torch.zeros(3)]))
    torch.testing.assert_close(pool(x), x.mean(1))
    weights = pool(x, mask, need_weights=True).weights
    torch.testing.assert_close(weights, torch.tensor([[[0.5, 0.5, 0.0, 0.0]], [[0.0] * 4]]))
    with pytest.raises(
        ShapeError,
        match=r"none \(mean pooling\): x must have shape \(..., N, D\) and mask \(..., N\), "
        r"got x \(2, 4, 3\) and mask \(2, 3\)",
    ):
        pool(x, mask[:, :3])


def test_a_block_name_is_checked_while_the_config_is_parsed():
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--attention", type=FeatureMapBlock)
    assert parser.parse_args(["--attention=eca"]).attention == "eca"
    assert parser.parse_args(["--attention=none"]).attention == "none"
    spec = parser.parse_args(['--attention={"class_path": "timm.layers.EcaModule", "init_args": {"kernel_size": 5}}'])
    assert callable(parser.instantiate(spec).attention)
    with pytest.raises(Exception, match="unknown feature_map block 'ecaa'; did you mean: eca"):
        parser.parse_args(["--attention=ecaa"])


def test_timms_names_are_aliases_of_the_same_blocks(capsys):
    assert aliases() == {"gca": "gc", "nl": "non_local"}
    assert type(create("nl", 16)).__name__ == "NonLocal" and create("nl", 16).block_name == "non_local"
    assert type(build("gca", 16, kind="feature_map")).__name__ == "GlobalContext"
    assert (
        create("se", 64, rd_ratio=1 / 8).fc1.out_features == 8
        and create("cbam", 64, rd_ratio=0.25).fc1.out_features == 16
    )
    assert (
        create("gc", 64, rd_channels=12).fc1.out_features == 12
        and create("nl", 16, rd_channels=4).theta.out_channels == 4
    )
    with pytest.raises(ValueError, match=r"se: rd_ratio must be 1 / a whole number .*got 0.3; give rd_channels"):
        create("se", 64, rd_ratio=0.3)
    with pytest.raises(TypeError, match="se: rd_divisor .* has no counterpart here; give rd_channels"):
        create("se", 64, rd_divisor=8)
    with pytest.raises(TypeError, match=r"cbam: give rd_ratio \(timm's name\) or reduction, not both"):
        create("cbam", 64, rd_ratio=0.25, reduction=4)
    with pytest.raises(UnknownBlockError, match=r"unknown attention block 'nll'; did you mean: nl \(= non_local\)\?"):
        create("nll", 16)
    with pytest.raises(ValueError, match=r"unknown feature_map block 'non_locl'; did you mean: non_local\?"):
        build("non_locl", 16, kind="feature_map")
    with pytest.raises(ValueError, match="'nl' is a feature_map block; this slot takes sequence blocks"):
        build("nl", 16, kind="sequence")
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--attention", type=FeatureMapBlock)
    assert parser.parse_args(["--attention=nl"]).attention == "non_local"  # the config keeps the block's own name
    main(["blocks", "nl"])
    assert "\nnon_local (nl) " in capsys.readouterr().out
    assert listed(capsys, "n?") == ["non_local"] and listed(capsys, "gca", "--markdown") == ["gc"]


def test_created_blocks_know_their_catalogue_name():
    assert create("additive", 8).block_name == "additive"
    assert create("cbam", 16).block_name == "cbam"


def test_every_block_class_is_exported_and_named_by_its_kinds_package():
    for name in available():
        entry = info(name)
        cls, package = entry.builder, importlib.import_module(f"framework.attention.{entry.kind}")
        where = f"framework/attention/{entry.kind}/__init__.py"
        assert getattr(package, cls.__name__, None) is cls and cls.__name__ in package.__all__, (
            f"{name}: import {cls.__name__} from .{cls.__module__.rpartition('.')[2]} in {where} and add it to __all__"
        )
        names = [n for n in available(entry.kind) if info(n).builder is cls]
        assert any(f"``{n}``" in package.__doc__ for n in names), (
            f"{name}: the docstring of {where} names none of {names}"
        )


@pytest.mark.slow
def test_the_block_library_imports_torch_and_its_blocks_needs_only():
    """``import framework.attention`` loads neither Lightning nor the config parser nor TorchDynamo."""
    heavy = ("lightning", "torchmetrics", "matplotlib", "jsonargparse", "scipy", "torch._dynamo", "torch_geometric")
    code = f"import sys, framework.attention; print([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"import framework.attention imported {done.stdout.strip()}"


def test_the_catalogue_page_matches_the_registry():
    assert Path(sync_readme.catalogue.__file__).resolve().is_relative_to(ROOT)  # this checkout's registry
    assert sync_readme.CATALOGUE == ROOT / "docs" / "catalogue.md"
    assert not sync_readme.stale(), "docs/catalogue.md is out of date: run `python -m tools.sync_readme`"


@pytest.mark.slow
def test_the_sync_reads_the_registry_of_the_checkout_it_runs_in(tmp_path):
    """Another ``framework`` earlier on the path than any installed one (another checkout's, as a
    shared virtual environment gives) loses to this checkout's: ``python -m`` from the root puts
    the root first. (``python tools/sync_readme.py`` put tools/ first and imported the other.)"""
    other = tmp_path / "framework"
    other.mkdir()
    (other / "__init__.py").write_text("raise ImportError('the registry of another checkout')\n")
    done = subprocess.run(
        [sys.executable, "-m", "tools.sync_readme", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr


def listed(capsys, *args: str) -> list[str]:
    """The block names that ``python -m framework blocks ARGS`` prints, in its order."""
    main(["blocks", *args])
    out = capsys.readouterr().out.splitlines()
    if "--markdown" in args:
        return [line.split("`")[1] for line in out if line.startswith("| `")]
    return [
        line.split()[0] for line in out[1:] if line[:1].isalpha() and not line.startswith(("score ", "distribution "))
    ]


def test_blocks_lists_one_kind_in_any_spelling(capsys):
    assert listed(capsys, "graph") == ["gat", "gatv2", "han"]
    assert listed(capsys, "memory") == ["episodic_memory", "hopfield", "memory_read", "ntm"]
    feature_maps = available("feature_map")
    assert "cbam" in feature_maps and "mhsa" not in feature_maps
    for spelling in ("feature_map", "feature-map", "feature map", "Feature-Map"):
        assert listed(capsys, spelling) == feature_maps, spelling
    sequence = listed(capsys, "sequence", "--markdown")
    assert sequence == available("sequence") and {"local", "mhsa"} <= set(sequence) and "cbam" not in sequence


def test_blocks_filters_names_by_a_glob_alone_or_within_a_kind(capsys):
    assert listed(capsys, "*co_attention") == [
        "alternating_co_attention",
        "interactive_co_attention",
        "multi_grained_co_attention",
        "parallel_co_attention",
    ]
    assert listed(capsys, "cross", "multi*") == [
        "multi_dimensional",
        "multi_grained_co_attention",
        "multi_head",
        "multi_hop",
    ]
    assert listed(capsys, "danet_?????*", "--markdown") == ["danet_channel", "danet_position"]
    assert listed(capsys, "cbam") == ["cbam"]  # a block's own name is a pattern too
    everything = listed(capsys)
    assert everything == [name for name, *_ in catalogue.rows()] and sorted(everything) == available()


def test_blocks_fits_the_terminal_width(capsys, monkeypatch):
    for columns in (80, 250):
        monkeypatch.setenv("COLUMNS", str(columns))
        assert sorted(listed(capsys)) == available(), columns
        main(["blocks"])
        lines = capsys.readouterr().out.splitlines()
        assert max(map(len, lines)) <= columns, columns
        entry = info("adaptive_span")
        block = "\n".join(lines[lines.index(next(line for line in lines if line.startswith("adaptive_span "))) :][:8])
        for cell in (entry.category, entry.source, entry.paper):  # every word of a wrapped cell is there
            assert all(word in block for word in cell.replace("/", "/ ").split()), (columns, cell)
    assert len(lines) > len(available()) + 6, "at 250 columns each block's paper goes below it"
    monkeypatch.setenv("COLUMNS", "400")
    main(["blocks", "graph"])
    wide = capsys.readouterr().out.splitlines()
    assert len(wide) == 2 + 3 and info("han").paper in wide[-1], "one line per block where the table fits"
    assert max(map(len, catalogue.text(width=None).splitlines())) > 250, "no width: not wrapped (a pipe)"


def test_blocks_says_when_nothing_matches(capsys):
    main(["blocks", "sequence", "multi*"])
    out = capsys.readouterr().out
    assert out == "no sequence block matches 'multi*'; `python -m framework blocks sequence` lists them\n"
    main(["blocks", "zz*"])
    assert capsys.readouterr().out == "no block matches 'zz*'; `python -m framework blocks` lists them\n"


def test_blocks_with_an_unknown_kind_lists_the_kinds_and_exits_2(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["blocks", "graphs"])
    assert exit.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("python -m framework blocks: unknown kind 'graphs'; the kinds are ")
    assert all(kind in err for kind in KINDS)


def test_the_registry_says_where_a_block_goes_and_where_it_is_defined():
    for name in available():
        entry = info(name)
        assert (ROOT / entry.source).is_file() and entry.source.startswith("framework/attention/"), name
        assert (entry.placement is not None) == (entry.kind == "feature_map"), name
    assert {n for n in available("feature_map") if info(n).placement == "stage"} == {
        "criss_cross",
        "non_local",
        "danet",
        "danet_position",
        "danet_channel",
        "sagan",
        "axial",
    }
    with pytest.raises(ValueError, match="a feature_map block names its placement"):
        from framework.attention.registry import register

        register("new_gate", kind="feature_map", category="vision / gate", paper="-")(torch.nn.Identity)
