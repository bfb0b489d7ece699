"""Which path each block computes its attention on, chosen for the whole model or per block.

A block with several paths lists them in ``block.backends``, its default first, and says the
one it takes in ``block.backend`` (the run's summary records it). The paths:

* ``eager``: the explicit weights and softmax (or the block's normalisation), the reference;
* ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention``, the fused kernels;
* ``linear``: the linear-time path of kernel scores (running sums of the features);
* ``flex``: FlexAttention (sparse patterns; forward only on the CPU in torch 2.11);
* ``triton``, ``portable``: the criss-cross operator's Triton kernels (CUDA) or its matmuls;
* ``compiled``: the block's default path under ``torch.compile`` (any block with several paths).

    use(model, "eager")                              # every block that has the path
    use(model, {"encoder.layers.0.*": "eager", "head.*": "sdpa"})   # glob over module or registry names
    check(model, torch.device("cpu"))                # the device has what was chosen

A choice that no block has, a block without the chosen path, or a path its device lacks is a
``ValueError`` of one line naming the block and the paths it has.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Literal, Optional, Union, get_args

import torch
from torch import nn

from .base import AttentionBlock
from .choice import blocks_in

#: The paths a block may run on, by name (``--attention_backend``, ``parity --backends``).
Backend = Literal["eager", "sdpa", "linear", "flex", "triton", "portable", "compiled"]
BACKENDS: tuple[str, ...] = get_args(Backend)
Choice = Union[str, Mapping[str, str]]


def paths(block: AttentionBlock) -> tuple[str, ...]:
    """The paths ``block`` can be run on: its own, and ``compiled`` where it has several; () for one."""
    own = tuple(block.backends)
    return (*own, "compiled") if own else ()


def multi_path_blocks(model: nn.Module) -> dict[str, AttentionBlock]:
    """The model's blocks with several paths, by module name ("" for the model itself)."""
    return {name: block for name, block in blocks_in(model).items() if paths(block)}


def _matches(pattern: str, name: str, block: AttentionBlock) -> bool:
    return fnmatchcase(name, pattern) or pattern == block.block_name


def choose(block: AttentionBlock, backend: str, name: str = "") -> None:
    """Run ``block`` (called ``name`` in its model) on ``backend``, one of :func:`paths`."""
    _known(backend)
    if backend not in paths(block):
        raise ValueError(
            f"attention backend {backend!r}: block {name or '(the model)'} ({block.block_name}) has "
            f"{', '.join(paths(block))}"
        )
    if backend == "compiled":
        block.compile()  # its default path, traced by torch.compile on the first call
    block.chosen_backend = backend


def use(model: nn.Module, choice: Optional[Choice]) -> dict[str, str]:
    """Run the model's blocks on the chosen paths: a name for every block that has that path, or
    ``{pattern: name}`` per block (patterns: globs over module names, or registry names; each must
    match a block with several paths). Returns {block: backend} of the blocks set; None or
    ``"auto"`` sets none."""
    if choice is None or choice == "auto":
        return {}
    blocks = multi_path_blocks(model)
    chosen: dict[str, str] = {}
    if isinstance(choice, str):
        _known(choice)
        chosen = {name: choice for name, block in blocks.items() if choice in paths(block)}
        if not chosen:
            offered = sorted({path for block in blocks.values() for path in paths(block)}, key=BACKENDS.index)
            raise ValueError(
                f"attention backend {choice!r}: no block of the model has it (its blocks' paths: "
                f"{', '.join(offered) or 'none, each block has one path'})"
            )
    else:
        for pattern, backend in choice.items():
            _known(backend)
            matched = [name for name, block in blocks.items() if _matches(pattern, name, block)]
            if not matched:
                raise ValueError(
                    f"attention backend for {pattern!r}: no block with several paths matches it "
                    f"(those of the model: {', '.join(blocks) or 'none'})"
                )
            chosen.update({name: backend for name in matched})
    for name, backend in chosen.items():
        choose(blocks[name], backend, name)
    return chosen


def check(model: nn.Module, device: torch.device, training: bool = False) -> None:
    """A one-line error when a block's chosen path cannot run on ``device`` (``triton`` on the CPU),
    or, ``training``, has no backward there (``flex`` on the CPU)."""
    for name, block in multi_path_blocks(model).items():
        backend = block.chosen_backend
        missing = backend and backend != "compiled" and block.backend_missing(backend, device, training)
        if missing:
            raise ValueError(
                f"attention backend {backend!r} of block {name or '(the model)'} ({block.block_name}): {missing}"
            )


def _known(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"attention backend {backend!r}: not one of {', '.join(BACKENDS)} (or auto)")
