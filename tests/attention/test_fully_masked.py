"""The class of "no real positions": every block that takes a padding mask (sequence, pooling,
cross and memory blocks), on every path it has (``framework.attention.backends``) and every
device, gives finite outputs and the right gradient for an example whose every position is
masked, and leaves the other examples of its batch as they are (``generic.fully_masked_example``).
The losses and reductions over positions are held to the same in ``tests/test_no_real_positions.py``."""

from __future__ import annotations

import pytest

from framework.attention import available
from tests.attention.generic import fully_masked_example, mask_backends, takes_masks

MASKED = [(name, backend) for name in available() if takes_masks(name) for backend in mask_backends(name)]


def test_the_masked_blocks_and_their_paths_are_found():
    names = {name for name, _ in MASKED}
    assert {"mhsa", "local", "performer", "pooling", "hierarchical", "capsule", "pma", "multi_head"} <= names
    assert {"sdpa", "eager", "linear", "flex"} <= {backend for _, backend in MASKED}
    assert not names & {"criss_cross", "se", "gat", "ntm"}, "blocks without a mask are not in the class"


@pytest.mark.parametrize("name, backend", MASKED, ids=[f"{name}-{backend}" for name, backend in MASKED])
def test_an_example_with_every_position_masked(name, backend, device):
    fully_masked_example(name, backend, device)
