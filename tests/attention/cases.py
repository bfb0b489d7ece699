"""Every registered block at small sizes with typical inputs (masks included), for the tests
that run all of them (compile, ablation). A newly registered block fails those tests until
it has a case here, or in a module ``tests/attention/cases_<family>.py`` whose ``CASES`` are
added to these, so none is skipped silently."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Callable

import torch
from torch import Tensor, nn

from framework.attention import available, create

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

for _module in pkgutil.iter_modules([str(Path(__file__).parent)], "tests.attention."):
    if _module.name.rpartition(".")[2].startswith("cases_"):
        CASES.update(importlib.import_module(_module.name).CASES)
