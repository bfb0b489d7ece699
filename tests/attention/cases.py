"""Every registered block as a case: the block at small sizes with typical inputs (masks
included), for the generic tests that run all of them (``generic.py``: compile, ablation,
capture, devices).

:func:`case` builds one. Most blocks need nothing written here: :func:`generic` reads the
block's kind in the registry and builds ``create(name, *widths)`` with that kind's typical
inputs (:func:`typical_inputs`), passing a mask by keyword where the block's ``forward``
takes one (``mask`` or ``key_padding_mask``). A block that wants other constructor
arguments (several heads, causal) or a longer input has ``"name": generic("name", ...)`` in
:data:`CASES`; one that takes other inputs a hand-written case there, a function returning
``(block, args, kwargs)``. Cases are kept by family in modules ``tests/attention/cases_<family>.py``,
whose ``CASES`` are added to these. A block whose generic case fails to build or run fails
every generic test with a message that says where to add its case (:class:`CaseError`).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from framework.attention import create, info

D = 8
Case = Callable[[], tuple[nn.Module, tuple, dict]]
#: A small graph: 6 nodes, 8 edges, one of them a self loop (replaced by PyG's own).
EDGES = torch.tensor([[0, 1, 2, 3, 4, 5, 1, 2], [1, 2, 3, 4, 5, 0, 3, 2]])
#: The keyword names under which a block's forward takes the padding mask of the generic inputs.
MASK_NAMES = ("mask", "key_padding_mask")


class CaseError(AssertionError):
    """A registered block that its kind's generic case cannot run; the message says where to add one."""


def _mask(batch: int = 2, length: int = 5) -> Tensor:
    mask = torch.ones(batch, length, dtype=torch.bool)
    mask[1, 3:] = False  # the second example has padded positions from the fourth on
    return mask


def typical_inputs(kind: str, length: int = 5) -> tuple[tuple[int, ...], tuple, Tensor]:
    """(widths the block is built with, positional inputs, padding mask or None) of a kind;
    ``length`` is the number of tokens, keys, memory slots or the map's height."""
    mask = _mask(2, length)
    if kind in ("sequence", "pooling"):
        return (D,), (torch.randn(2, length, D),), mask
    if kind == "cross":
        return (D,), (torch.randn(2, 3, D), torch.randn(2, length, D)), mask
    if kind == "memory":
        return (D,), (torch.randn(2, D), torch.randn(2, length, D)), mask
    if kind == "feature_map":
        return (D,), (torch.randn(2, D, length, 6),), None
    if kind == "graph":
        return (5, 4), (torch.randn(6, 5), EDGES), None
    raise ValueError(f"no typical inputs for the kind {kind!r}: add them to typical_inputs in {__file__}")


def generic(name: str, length: int = 5, **options: object) -> Case:
    """The case of ``name`` from its kind: ``create(name, *widths, **options)`` called with the
    kind's typical inputs, the mask by keyword where the block's forward names one."""

    def build() -> tuple[nn.Module, tuple, dict]:
        widths, args, mask = typical_inputs(info(name).kind, length)
        block = create(name, *widths, **options)
        taken = inspect.signature(block.forward).parameters
        kwargs = {key: mask for key in MASK_NAMES if key in taken and mask is not None}
        return block, args, kwargs

    return build


def case(name: str) -> tuple[nn.Module, tuple, dict]:
    """``(block, args, kwargs)`` of a registered block: its case in :data:`CASES`, else the
    generic case of its kind, tried once on a copy so that a block it does not fit fails here,
    saying where to add a case."""
    if name in CASES:
        return CASES[name]()
    kind = info(name).kind
    try:
        block, args, kwargs = generic(name)()
        with torch.no_grad():
            copy.deepcopy(block).eval()(*args, **kwargs)
    except Exception as err:
        shapes = ", ".join(str(tuple(a.shape)) for a in typical_inputs(kind)[1])
        raise CaseError(
            f"{name}: the generic {kind} case (create({name!r}, {', '.join(map(str, typical_inputs(kind)[0]))}) "
            f"called with {shapes} and the mask by keyword) fails: {type(err).__name__}: {err}\n"
            f"Add its case to CASES in tests/attention/cases.py or a tests/attention/cases_<family>.py: "
            f"{name!r}: generic({name!r}, option=...) for other constructor arguments, or a function "
            "returning (block, args, kwargs) for other inputs"
        ) from err
    return block, args, kwargs


CASES: dict[str, Case] = {
    "mhsa": generic("mhsa", num_heads=2, causal=True),
    "local": generic("local", window=1),
    "pooling": generic("pooling", num_queries=2),
    "gat": generic("gat", heads=2),
    "gatv2": generic("gatv2", heads=2),
    "parallel_co_attention": lambda: (
        create("parallel_co_attention", D),
        (torch.randn(2, 5, D), torch.randn(2, 4, D), _mask()),
        {},
    ),
    "alternating_co_attention": lambda: (
        create("alternating_co_attention", D),
        (torch.randn(2, 5, D), torch.randn(2, 4, D), _mask()),
        {},
    ),
    "rotatory": lambda: (
        create("rotatory", D, hops=2),
        (torch.randn(2, 5, D), torch.randn(2, 3, D), torch.randn(2, 4, D), _mask()),
        {},
    ),
    "hierarchical": lambda: (create("hierarchical", D), (torch.randn(2, 3, 4, D), torch.rand(2, 3, 4) > 0.3), {}),
    "memory_read": lambda: (
        create("memory_read", 4, hops=2),
        (torch.randn(2, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4), _mask()),
        {},
    ),
}

for _module in pkgutil.iter_modules([str(Path(__file__).parent)], "tests.attention."):
    if _module.name.rpartition(".")[2].startswith("cases_"):
        CASES.update(importlib.import_module(_module.name).CASES)
