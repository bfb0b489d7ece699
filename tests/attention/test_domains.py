"""The domains the blocks declare for the config parser: the choice types name exactly the
functions there are, and the parser resolves a block's types (imported under ``TYPE_CHECKING``,
so the library alone does not load the parser) and refuses a value outside them, naming the key.
Which keys have a domain at all is ``tests/test_config_domains.py``'s concern."""

from __future__ import annotations

import subprocess
import sys
from typing import get_args

from framework.attention.cross import DISTRIBUTIONS, SCORES
from framework.attention.cross.distribution import DistributionName
from framework.attention.cross.score import ScoreName
from tests.conftest import ROOT


def test_the_choices_of_score_and_distribution_are_the_tables_names():
    assert sorted(get_args(ScoreName)) == sorted(SCORES)
    assert sorted(get_args(DistributionName)) == sorted(DISTRIBUTIONS)


PARSE = """
import sys
from jsonargparse import ArgumentParser
from framework.attention import Attention
assert "framework.values" not in sys.modules, "the library loaded the domains' module"
parser = ArgumentParser(exit_on_error=False)
parser.add_class_arguments(Attention, "block")
parsed = parser.parse_args(["--block.dim=8", "--block.dropout=0.25", "--block.score=additive"]).block
print(type(parsed.dim).__name__, type(parsed.dropout).__name__, parsed.score)
for bad in ("--block.dropout=1.0", "--block.num_heads=0", "--block.key_dim=0", "--block.score=dott"):
    try:
        parser.parse_args(["--block.dim=8", bad])
        print("accepted", bad)
    except Exception as error:
        print(" ".join(str(error).split()))
"""


def test_the_parser_resolves_a_blocks_domains_and_refuses_values_outside_them():
    done = subprocess.run([sys.executable, "-c", PARSE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first, *refusals = done.stdout.splitlines()
    assert first == "int float additive"  # plain numbers, as checkpoints store them
    assert len(refusals) == 4 and not any(line.startswith("accepted") for line in refusals), refusals
    dropout, heads, key_dim, score = refusals
    assert "block.dropout" in dropout and "expected a number in [0, 1), got '1.0'" in dropout
    assert "block.num_heads" in heads and "expected an int >= 1" in heads
    assert "block.key_dim" in key_dim
    assert "block.score" in score and "dott" in score
