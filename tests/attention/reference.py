"""Checking a block against an independent formula: outputs and gradients.

Each block test writes the block's equation again, naively (explicit loops or dense
einsums, no code shared with the library), and calls :func:`assert_matches_reference`.
The comparison runs in float64 so that a wrong formula cannot hide behind rounding.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import Tensor, nn


def assert_matches_reference(
    block: nn.Module,
    reference: Callable[..., Tensor],
    *inputs: Tensor,
    atol: float = 1e-9,
    rtol: float = 1e-7,
    output: Callable[[object], Tensor] = lambda out: out,
    device: str = "cpu",
    **kwargs: object,
) -> None:
    """``block(*inputs, **kwargs)`` equals ``reference(block, *inputs, **kwargs)``, and so do
    the gradients of a random projection of the output with respect to every floating input
    and every parameter of the block.

    ``reference`` reads the block's parameters but computes with its own formula, always on
    the CPU; the block runs on ``device`` (a copy of it, with its inputs moved there), so the
    same test checks the block on every device. ``output`` picks the tensor to compare when
    the block returns more than one.
    """
    block = block.double()
    inputs = tuple(x.double().requires_grad_() if x.is_floating_point() else x for x in inputs)
    on_device = copy.deepcopy(block).to(device)
    moved = tuple(x.detach().to(device).requires_grad_(x.requires_grad) for x in inputs)
    moved_kwargs = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in kwargs.items()}

    got = output(on_device(*moved, **moved_kwargs))
    want = reference(block, *inputs, **kwargs)
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != reference {tuple(want.shape)}"
    torch.testing.assert_close(got.cpu(), want, atol=atol, rtol=rtol, msg=lambda m: f"output differs: {m}")

    cotangent = torch.randn_like(want)
    got_grads = _grads(got, [x for x in moved if x.requires_grad] + _params(on_device), cotangent.to(device))
    want_grads = _grads(want, [x for x in inputs if x.requires_grad] + _params(block), cotangent)
    names = [f"input {i}" for i, x in enumerate(inputs) if x.requires_grad]
    names += [n for n, p in block.named_parameters() if p.requires_grad]
    for name, g, w in zip(names, got_grads, want_grads):
        if w is None:
            assert g is None or not g.any(), f"gradient of {name}: reference has none"
            continue
        assert g is not None, f"gradient of {name} is missing"
        torch.testing.assert_close(
            g.cpu(), w, atol=atol, rtol=rtol, msg=lambda m, n=name: f"gradient of {n} differs: {m}"
        )


def _params(block: nn.Module) -> list[Tensor]:
    return [p for p in block.parameters() if p.requires_grad]


def _grads(out: Tensor, leaves: list[Tensor], cotangent: Tensor) -> tuple:
    return torch.autograd.grad(out, leaves, cotangent, allow_unused=True)


def randomize_(module: nn.Module, scale: float = 0.5, seed: int = 0) -> nn.Module:
    """Give every parameter random values, so zero-initialised gates and scales
    (CCNet's gamma, a non-local block's last BN) do not make the test trivial."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * scale)
    return module
