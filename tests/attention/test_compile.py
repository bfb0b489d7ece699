"""Every registered block compiles without graph breaks and gives eager's numbers.

For each name of ``framework.attention.available()``, :func:`~tests.attention.cases.case`
builds the block at small sizes with typical inputs (masks included; the generic case of its
kind unless ``cases.py`` holds another); ``torch.compile(block, fullgraph=True,
backend="aot_eager")`` must trace forward and backward in one graph each and match eager in
outputs and in the gradients of inputs and parameters.
"""

from __future__ import annotations

import pytest

from framework.attention import available
from tests.attention.generic import compiles_like_eager

pytestmark = pytest.mark.slow  # every test here trains, or runs the command line end to end


@pytest.mark.parametrize("name", available())
def test_block_compiles_without_graph_breaks_and_matches_eager(name):
    compiles_like_eager(name)
