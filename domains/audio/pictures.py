"""Pictures of clips: the log-mel spectrogram with the model's attention over time frames below it."""

from __future__ import annotations

from typing import Optional

from torch import Tensor

from framework.pictures import bars, colour, heatmap, stacked

STRIP_HEIGHT = 48  # pixels of the attention bars under the spectrogram
GAP = 2  # pixels between spectrogram and bars
BAR_COLOUR = colour((255, 140, 0))


def spectrogram_with_attention(features: Tensor, weights: Optional[Tensor] = None) -> Tensor:
    """(F, N) features (and (N,) weights over the frames) -> (H, W, 3) uint8 image.

    The spectrogram is drawn with low frequencies at the bottom; under it, one bar per
    frame whose height is the frame's weight relative to the largest weight.
    """
    picture = heatmap(features.flip(0))
    if weights is None:
        return picture
    scale = picture.shape[1] // features.shape[1]
    return stacked(picture, bars(weights, scale, STRIP_HEIGHT, BAR_COLOUR), gap=GAP)
