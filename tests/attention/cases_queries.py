"""Cases of the query- and feature-related blocks (attention-over-attention, interactive and
multi-grained co-attention, attention-via-attention, capsules, meta-embeddings) for the tests
that run every block; ``deep_alignment`` is a preset of the general model and takes the
generic cross case."""

from __future__ import annotations

import torch

from framework.attention import create
from tests.attention.cases import Case, D, _mask, generic


def _pair(name: str) -> Case:
    """Co-attention style: x1 (2, 5, D) with a padded second example, x2 (2, 4, D) likewise."""
    return lambda: (create(name, D), (torch.randn(2, 5, D), torch.randn(2, 4, D), _mask(), _mask(length=4)), {})


CASES: dict[str, Case] = {
    "attention_over_attention": _pair("attention_over_attention"),
    "interactive_co_attention": _pair("interactive_co_attention"),
    "multi_grained_co_attention": _pair("multi_grained_co_attention"),
    "attention_via_attention": lambda: (
        create("attention_via_attention", D, 6, 4),
        (torch.randn(2, 3, D), torch.randn(2, 5, 6), torch.randn(2, 7, 4), _mask(), _mask(length=7)),
        {},
    ),
    "capsule": generic("capsule", num_capsules=3),
    "meta_embedding": lambda: (
        create("meta_embedding", D, embedding_dims=[4, 6]),
        (torch.randn(2, 5, 4), torch.randn(2, 5, 6)),
        {},
    ),
}
