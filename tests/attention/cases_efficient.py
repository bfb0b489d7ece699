"""Cases of the efficient and structured self-attention blocks (the compile and ablation tests run
them; the sparse-distribution presets entmax15, adaptive_entmax and quasi_attention are cross
blocks, whose cases ``cases.py`` builds for every cross name)."""

from __future__ import annotations

import torch

from framework.attention import create
from tests.attention.cases import D, Case, _mask


def _sequence(name: str, length: int = 5, **kwargs: object) -> Case:
    mask = _mask(2, length)
    return lambda: (create(name, D, num_heads=2, **kwargs), (torch.randn(2, length, D), mask), {})


CASES: dict[str, Case] = {
    "linformer": _sequence("linformer", rank=3, max_len=8),
    "performer": _sequence("performer", features=6),
    "sparse_strided": _sequence("sparse_strided", length=7, stride=2),
    "sparse_fixed": _sequence("sparse_fixed", length=7, stride=3, summary=1, causal=True),
    "adaptive_span": _sequence("adaptive_span", max_span=3, ramp=1),
    "synthesizer_dense": _sequence("synthesizer_dense", max_len=8),
    "synthesizer_random": _sequence("synthesizer_random", max_len=8, rank=2),
    "transformer_xl": _sequence("transformer_xl", length=7, segment=3),
}
