"""Cases of the vision blocks of catalogue II (SAGAN, axial, stand-alone) for the tests that run
every block (compile, ablation): small maps, several heads, pooled keys, windows cut by the border."""

from __future__ import annotations

import torch

from framework.attention import create

CASES = {
    "sagan": lambda: (create("sagan", 16, value_reduction=2, pool=True), (torch.randn(2, 16, 5, 6),), {}),
    "axial": lambda: (create("axial", 8, num_heads=2), (torch.randn(2, 8, 5, 6),), {}),
    "stand_alone": lambda: (create("stand_alone", 8, kernel_size=3, num_heads=2), (torch.randn(2, 8, 5, 6),), {}),
}
