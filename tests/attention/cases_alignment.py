"""Cases of the alignment and pointing blocks whose options or inputs differ from the generic
cross case of ``cases.py`` (location-aware and GRU-gated attention take it as it is)."""

from __future__ import annotations

import torch

from framework.attention import create
from tests.attention.cases import Case, D, _mask, generic


def _pointer_generator() -> tuple:
    vocab, n = 7, 5
    features = torch.randn(2, 3, D)
    weights = (torch.randn(2, 3, n) + torch.where(_mask(2, n), 0.0, -1e9)[:, None]).softmax(-1)
    source = torch.randint(0, vocab, (2, n))
    return (
        create("pointer_generator", D),
        (features, weights, source, torch.randn(2, 3, vocab)),
        {"key_padding_mask": _mask(2, n)},
    )


CASES: dict[str, Case] = {
    # the scan stops somewhere under random weights: a bias of 0 instead of -4
    "mocha": generic("mocha", energy_bias=0.0),
    "monotonic_multi_head": generic("monotonic_multi_head", num_heads=2, energy_bias=0.0),
    "area": lambda: (
        create("area", D, max_width=2, max_height=2, key_features="mean_std"),
        (torch.randn(2, 3, D), torch.randn(2, 6, D)),
        {"key_padding_mask": _mask(2, 6), "grid": (2, 3)},
    ),
    "pointer": lambda: (create("pointer", D), (torch.randn(2, 3, D), torch.randn(2, 5, D)), {}),  # finite outputs
    "pointer_generator": _pointer_generator,
}
