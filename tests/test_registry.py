"""The registry and the catalogue: names, kinds, errors, and the README kept in step."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from jsonargparse import ArgumentParser

from framework.attention import KINDS, UnknownBlockError, available, build, create, info
from framework.attention.spec import FeatureMapBlock, NoAttention
from tests.conftest import ROOT

BLOCK_TESTS = (ROOT / "tests" / "attention").glob("test_*.py")


def test_every_registered_block_is_named_in_a_block_test():
    """A block without a test against a reference formula is a defect: fail for it."""
    text = "\n".join(p.read_text() for p in BLOCK_TESTS)
    untested = [name for name in available() if f'"{name}"' not in text and f"'{name}'" not in text]
    assert not untested, f"registered blocks with no test naming them: {untested}"


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
    with pytest.raises(ValueError, match="'mhsa' is a sequence block; this slot takes feature_map blocks: cbam"):
        build("mhsa", 16, kind="feature_map")
    with pytest.raises(ValueError, match="cannot import it"):
        build("no.such.Block", 16)


def test_a_block_name_is_checked_while_the_config_is_parsed():
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--attention", type=FeatureMapBlock)
    assert parser.parse_args(["--attention=eca"]).attention == "eca"
    assert parser.parse_args(["--attention=none"]).attention == "none"
    spec = parser.parse_args(['--attention={"class_path": "timm.layers.EcaModule", "init_args": {"kernel_size": 5}}'])
    assert callable(parser.instantiate(spec).attention)
    with pytest.raises(Exception, match="unknown feature_map block 'ecaa'; did you mean: eca"):
        parser.parse_args(["--attention=ecaa"])


def test_created_blocks_know_their_catalogue_name():
    assert create("additive", 8).block_name == "additive"
    assert create("cbam", 16).block_name == "cbam"


def test_readme_catalogue_matches_the_registry():
    done = subprocess.run([sys.executable, "tools/sync_readme.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

