"""Pictures of segmentation: predicted masks beside the truth, and where one pixel looks."""

from __future__ import annotations

from typing import Optional

from torch import Tensor, nn


def pixel_attention(block: nn.Module, record: object, i: int, j: int, size: tuple[int, int]) -> Optional[Tensor]:
    """(B, h, w) weights with which feature pixel (i, j) attends, from a captured record.

    Criss-cross records are drawn by the block's ``pixel_map`` (the pixel's row and column);
    records of all-pairs attention (non-local, DANet position: (B, hw, hw)) by the pixel's
    row. None for records of other shapes (channel attention, sub-sampled keys).
    """
    if hasattr(block, "pixel_map") and isinstance(record, Tensor):
        return block.pixel_map(record, i, j)
    records = record if isinstance(record, (tuple, list)) else (record,)
    h, w = size
    for weights in records:
        if isinstance(weights, Tensor) and weights.dim() == 3 and weights.shape[1:] == (h * w, h * w):
            return weights[:, i * w + j].unflatten(1, (h, w))
    return None
