"""Cases of the vision blocks of catalogue II (SAGAN, axial, stand-alone): several heads, pooled
keys, windows cut by the border."""

from __future__ import annotations

import torch

from framework.attention import create
from tests.attention.cases import Case, generic

CASES: dict[str, Case] = {
    "sagan": lambda: (create("sagan", 16, value_reduction=2, pool=True), (torch.randn(2, 16, 5, 6),), {}),
    "axial": generic("axial", num_heads=2),
    "stand_alone": generic("stand_alone", kernel_size=3, num_heads=2),
}
