"""Every registered block compiles without graph breaks and gives eager's numbers.

For each name of ``framework.attention.available()``, :data:`CASES` builds the block at small
sizes with typical inputs (masks included); ``torch.compile(block, fullgraph=True,
backend="aot_eager")`` must trace forward and backward in one graph each and match eager in
outputs and in the gradients of inputs and parameters. A newly registered block fails here
until it has a case in ``tests/attention/cases.py``, so none is skipped silently.
"""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn

from framework.attention import available
from tests.attention.cases import CASES
from tests.attention.reference import randomize_


def _tensors(out: object) -> list[Tensor]:
    """The floating tensors of a block's output (a tensor or a tuple of them)."""
    if isinstance(out, Tensor):
        return [out] if out.is_floating_point() else []
    return [t for part in out for t in _tensors(part)]


def _run(block: nn.Module, args: tuple, kwargs: dict) -> tuple[list[Tensor], list[Tensor]]:
    """Outputs, then the gradients of the inputs and parameters, of one forward + backward."""
    torch.manual_seed(0)  # the same samples for stochastic blocks (hard attention)
    args = tuple(a.detach().requires_grad_() if a.is_floating_point() else a for a in args)
    outputs = _tensors(block(*args, **kwargs))
    leaves = [a for a in args if a.requires_grad] + list(block.parameters())
    loss = sum(out.square().sum() for out in outputs)
    return outputs, list(torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True))


@pytest.mark.parametrize("name", available())
def test_block_compiles_without_graph_breaks_and_matches_eager(name):
    assert name in CASES, f"no compile case for the registered block {name!r}: add one to CASES"
    torch.manual_seed(0)
    block, args, kwargs = CASES[name]()
    randomize_(block, scale=0.3)  # no zero gate or scale that would hide a wrong gradient
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    got_out, got_grads = _run(compiled, args, kwargs)
    want_out, want_grads = _run(block, args, kwargs)
    assert len(got_out) == len(want_out) > 0
    for got, want in zip(got_out + got_grads, want_out + want_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)

