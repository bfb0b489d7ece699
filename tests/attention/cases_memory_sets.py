"""Cases of catalogue II's memory, set and heterogeneous-graph blocks (Hopfield, NTM heads, DMN
episodic memory, the Set Transformer's MAB / SAB / ISAB / PMA, HAN) for the tests that run every
block (compile, ablation): small sizes, several heads or passes, padded slots and set elements."""

from __future__ import annotations

import torch

from framework.attention import create
from tests.attention.cases import Case, D, _mask, generic

#: HAN over one node type and two meta-paths (a ring, and random edges with a self loop).
METAPATHS = {
    "ring": torch.tensor([[0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0]]),
    "random": torch.tensor([[0, 2, 4, 1, 3, 3, 5], [3, 3, 1, 0, 5, 3, 2]]),
}

CASES: dict[str, Case] = {
    "hopfield": lambda: (
        create("hopfield", D, num_heads=2, steps=2),
        (torch.randn(2, 3, D), torch.randn(2, 5, D), _mask()),
        {},
    ),
    "ntm": lambda: (
        create("ntm", 6, 4, read_heads=2, write_heads=1),
        (torch.randn(2, 6), torch.randn(2, 5, 4), torch.randn(2, 3, 5).softmax(-1)),
        {},
    ),
    "episodic_memory": generic("episodic_memory", passes=2),
    "mab": generic("mab", num_heads=2),
    "sab": generic("sab", num_heads=2),
    "isab": generic("isab", num_inducing=3, num_heads=2),
    "pma": generic("pma", num_seeds=2, num_heads=2),
    "han": lambda: (
        create("han", 5, 4, metadata=list(METAPATHS), heads=2),
        (torch.randn(6, 5),),
        {"edge_index": dict(METAPATHS)},
    ),
}
