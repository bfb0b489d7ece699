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


ROW_HEIGHT = 12  # pixels of one output step in the alignment picture


def spectrogram_with_alignment(features: Tensor, alignment: Tensor) -> Tensor:
    """(F, N) features and the (M, N') alignment of M output steps over N' encoder frames ->
    (H, W, 3) uint8: the spectrogram, and under it one row per output step whose colour over
    time is its weight (each encoder frame stretched over the N / N' spectrogram frames it
    covers), so that each token is seen above the sound it was read from."""
    picture = heatmap(features.flip(0))
    scale = picture.shape[1] // features.shape[1]
    reduction = max(1, -(-features.shape[1] // alignment.shape[1]))
    rows = heatmap(alignment, min_side=1).repeat_interleave(ROW_HEIGHT, 0)
    rows = rows.repeat_interleave(reduction * scale, 1)[:, : picture.shape[1]]
    return stacked(picture, rows, gap=GAP)
