"""Every registered block compiles without graph breaks and gives eager's numbers.

For each name of ``framework.attention.available()``, :data:`CASES` builds the block at small
sizes with typical inputs (masks included); ``torch.compile(block, fullgraph=True,
backend="aot_eager")`` must trace forward and backward in one graph each and match eager in
outputs and in the gradients of inputs and parameters. A newly registered block fails here
until it has a case, so none is skipped silently.
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch
from torch import Tensor, nn

from framework.attention import available, create
from tests.attention.reference import randomize_

D = 8
Case = Callable[[], tuple[nn.Module, tuple, dict]]


def _mask(batch: int = 2, length: int = 5) -> Tensor:
    mask = torch.ones(batch, length, dtype=torch.bool)
    mask[1, 3:] = False  # the second example has two padded positions
    return mask


def _feature_map(name: str) -> Case:
    return lambda: (create(name, D), (torch.randn(2, D, 5, 6),), {})


def _cross(name: str) -> Case:
    return lambda: (create(name, D), (torch.randn(2, 3, D), torch.randn(2, 5, D)), {"key_padding_mask": _mask()})


def _graph(name: str) -> Case:
    edges = torch.tensor([[0, 1, 2, 3, 4, 5, 1, 2], [1, 2, 3, 4, 5, 0, 3, 2]])  # (2, 2): a self loop, replaced by PyG
    return lambda: (create(name, 5, 4, heads=2), (torch.randn(6, 5), edges), {})


CASES: dict[str, Case] = {
    **{name: _feature_map(name) for name in available("feature_map")},
    **{name: _cross(name) for name in available("cross")},
    "local_p": lambda: (create("local_p", D), (torch.randn(2, 3, D), torch.randn(2, 5, D)), {"key_padding_mask": _mask()}),
    "parallel_co_attention": lambda: (create("parallel_co_attention", D), (torch.randn(2, 5, D), torch.randn(2, 4, D), _mask()), {}),
    "alternating_co_attention": lambda: (create("alternating_co_attention", D), (torch.randn(2, 5, D), torch.randn(2, 4, D), _mask()), {}),
    "rotatory": lambda: (create("rotatory", D, hops=2), (torch.randn(2, 5, D), torch.randn(2, 3, D), torch.randn(2, 4, D), _mask()), {}),
    "mhsa": lambda: (create("mhsa", D, num_heads=2, causal=True), (torch.randn(2, 5, D), _mask()), {}),
    "local": lambda: (create("local", D, window=1), (torch.randn(2, 5, D), _mask()), {}),
    "pooling": lambda: (create("pooling", D, num_queries=2), (torch.randn(2, 5, D), _mask()), {}),
    "hierarchical": lambda: (create("hierarchical", D), (torch.randn(2, 3, 4, D), torch.rand(2, 3, 4) > 0.3), {}),
    "memory_read": lambda: (create("memory_read", 4, hops=2), (torch.randn(2, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4), _mask()), {}),
    "gat": _graph("gat"),
    "gatv2": _graph("gatv2"),
}


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

