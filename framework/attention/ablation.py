"""Ablation: a model's attention weights replaced at inference, to measure what they contribute.

The surveys' first evaluation of an attention model (Brauwers & Frasincar, 2021, §4.1) and the
faithfulness tests (Jain & Wallace, 2019) replace a block's weights by uniform ones (the
unweighted average), random ones, or its own weights permuted among the keys, and measure how
much the task's metric or the output moves. Every block of the library routes its weights
through :meth:`~framework.attention.AttentionBlock.ablate`, so::

    with ablation(model, "uniform"):              # every block, or patterns as for capture
        metrics = evaluate(model)

``python -m framework test ... --ablation=uniform`` does the same from the command line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, Optional, get_args

import torch
from torch import Tensor, nn

from .choice import blocks_in

#: The replacements of a block's weights.
Ablation = Literal["uniform", "random", "permute"]
ABLATIONS: tuple[str, ...] = get_args(Ablation)


def ablated(
    weights: Tensor, mode: str, valid: Optional[Tensor] = None, dim: int = -1, normalised: bool = True
) -> Tensor:
    """Weights replaced as an ablation study replaces them (Jain & Wallace, 2019; the surveys' A.2).

    For a distribution over keys (``normalised``: the weights along ``dim`` sum to 1 over the
    ``valid`` keys, boolean and broadcastable to ``weights``):

    * ``uniform``: 1 / n over the n valid keys, the unweighted average;
    * ``random``: a random point of the simplex over the valid keys (uniform, Dirichlet(1));
    * ``permute``: the block's own weights shuffled among the valid keys, per query.

    For a gate (not ``normalised``: independent values in [0, 1], SE's channel gate ...),
    ``uniform`` is a constant gate (the gate's mean over ``dim``), ``random`` uniform values
    in [0, 1], ``permute`` the gate's values shuffled along ``dim``. Invalid keys keep weight
    0; draws use torch's global generator.
    """
    if mode not in ABLATIONS:
        raise ValueError(f"ablation must be one of {', '.join(ABLATIONS)}, got {mode!r}")
    moved = weights.movedim(dim, -1)
    keep = (
        torch.ones_like(moved, dtype=torch.bool) if valid is None else valid.bool().expand_as(weights).movedim(dim, -1)
    )
    if mode == "permute":
        noise = torch.rand(moved.shape, device=moved.device).masked_fill(~keep, 2.0)  # invalid keys sort last
        order = noise.argsort(-1)  # a random order of each row's valid keys
        rank = keep.long().cumsum(-1) - 1  # the j-th valid key takes the j-th value of the shuffled valid keys
        shuffled = moved.gather(-1, order)
        result = shuffled.gather(-1, rank.clamp(min=0)).masked_fill(~keep, 0)
    elif not normalised:
        if mode == "uniform":
            mean = (moved * keep).sum(-1, keepdim=True) / keep.sum(-1, keepdim=True).clamp(min=1)
            result = mean.expand_as(moved) * keep
        else:
            result = torch.rand(moved.shape, device=moved.device, dtype=moved.dtype) * keep
    else:
        draw = torch.ones_like(moved) if mode == "uniform" else -torch.rand_like(moved).clamp(min=1e-12).log()
        draw = draw * keep
        result = draw / draw.sum(-1, keepdim=True).clamp(min=torch.finfo(draw.dtype).tiny)
    return result.to(weights.dtype).movedim(-1, dim)


@contextmanager
def ablation(model: nn.Module, mode: Optional[str], *patterns: str) -> Iterator[list[str]]:
    """Within the context, the chosen attention blocks of ``model`` (glob patterns over module
    names or registry names, as for :class:`~framework.attention.capture`; all by default) and
    the blocks inside them run with ``mode`` (one of :data:`ABLATIONS`, or None: no change).
    Yields the names of the ablated blocks; an empty list when the model has none."""
    if mode is not None and mode not in ABLATIONS:
        raise ValueError(f"ablation must be one of {', '.join(ABLATIONS)}, got {mode!r}")
    blocks = blocks_in(model)
    try:
        chosen = list(blocks_in(model, *patterns))
    except ValueError as error:
        raise ValueError(f"ablation: {error}") from None
    inside = {name for name in blocks if any(name == c or name.startswith(f"{c}.") or not c for c in chosen)}
    before = {name: blocks[name].ablation for name in inside}
    for name in inside:
        blocks[name].ablation = mode
    try:
        yield sorted(inside)
    finally:
        for name, previous in before.items():
            blocks[name].ablation = previous
