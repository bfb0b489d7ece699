"""Colours of segmentation classes, for drawing masks."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def voc_palette(num_classes: int) -> Tensor:
    """Pascal VOC's colour map, (num_classes, 3) uint8: class c's bits 0, 1, 2 set the most significant
    free bit of red, green and blue, then bits 3, 4, 5 the next ... (0 black, 1 maroon (128, 0, 0), ...)."""
    palette = torch.zeros(num_classes, 3, dtype=torch.uint8)
    for c in range(num_classes):  # a few dozen classes
        label, colour = c, [0, 0, 0]
        for shift in range(7, -1, -1):
            for channel in range(3):
                colour[channel] |= ((label >> channel) & 1) << shift
            label >>= 3
        palette[c] = torch.tensor(colour, dtype=torch.uint8)
    return palette


def as_palette(colours: Sequence[Sequence[int]]) -> Tensor:
    """A palette tensor (K, 3) uint8 from K RGB triples."""
    return torch.tensor(colours, dtype=torch.uint8)
