"""Pictures of memory reads: the attention of every hop over the story's sentences."""

from __future__ import annotations

from torch import Tensor

from framework.pictures import colour, heatmap, marks, stacked

SUPPORT_COLOUR = colour((230, 40, 40))


def hop_image(weights: Tensor, support: Tensor) -> Tensor:
    """(hops, N) attention over the story's N sentences -> (H, W, 3) uint8 heat map, one row per
    hop (top: hop 1) and one column per sentence (oldest left), over a strip that is red under
    the supporting facts and white elsewhere."""
    picture = heatmap(weights)
    column = picture.shape[1] // weights.shape[1]
    return stacked(picture, marks(support, column, max(4, column // 2), SUPPORT_COLOUR), gap=0)


def weights_image(weights: Tensor, width: int = 512) -> Tensor:
    """(rows, cols) weights -> (H, W, 3) uint8 heat map enlarged by whole pixels until its longer
    side is about ``width`` pixels (a strip of one row stays a strip)."""
    factor = max(1, width // max(weights.shape))
    return heatmap(weights, min_side=factor * min(weights.shape))
