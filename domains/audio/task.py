"""Clip classification with a picture of where the model listened: attention over time frames."""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.attention import AttentionBlock, capture
from framework.callbacks import heatmap
from framework.tasks import Classification, inputs_of

STRIP_HEIGHT = 48  # pixels of the attention bars under the spectrogram
GAP = 2  # pixels between spectrogram and bars
BAR_COLOUR = torch.tensor([255, 140, 0], dtype=torch.uint8)


def spectrogram_with_attention(features: Tensor, weights: Optional[Tensor] = None) -> Tensor:
    """(F, N) features (and (N,) weights over the frames) -> (H, W, 3) uint8 image.

    The spectrogram is drawn with low frequencies at the bottom; under it, one bar per
    frame whose height is the frame's weight relative to the largest weight.
    """
    picture = heatmap(features.flip(0))
    if weights is None:
        return picture
    scale = picture.shape[1] // features.shape[1]
    heights = (weights.float().cpu() / weights.max().clamp(min=1e-12) * STRIP_HEIGHT).round().long()
    rows = torch.arange(STRIP_HEIGHT - 1, -1, -1).unsqueeze(1)  # height above the strip's bottom
    lit = (rows < heights.repeat_interleave(scale).unsqueeze(0)).unsqueeze(-1)
    strip = torch.where(lit, BAR_COLOUR, torch.zeros(3, dtype=torch.uint8))
    gap = torch.full((GAP, picture.shape[1], 3), 255, dtype=torch.uint8)
    return torch.cat([picture, gap, strip])


class AudioClassification(Classification):
    """:class:`~framework.tasks.Classification` of clips (cross-entropy, ``acc``, macro ``f1``)
    that also draws, for the loggers, the log-mel spectrogram of the first validation clip
    with the weights of the model's pooling over time (``images/time_attention``).

    The weights are those of the model's ``pool`` attention block (captured during one
    forward pass of the clip), averaged over its queries and stretched from the pooled frames
    to the spectrogram's frames. Models without one (the CNN, ``pooling: none``) get the
    spectrogram alone. Both are cut to the clip's real frames.
    """

    def check(self, model: nn.Module, data: Any) -> None:
        """The front end must expect the data's sample rate (its mel scale depends on it)."""
        frontend, rate = getattr(model, "frontend", None), getattr(data, "sample_rate", None)
        if frontend is not None and rate is not None and frontend.sample_rate != rate:
            raise ValueError(f"model.frontend.init_args.sample_rate is {frontend.sample_rate} Hz but "
                             f"data.sample_rate is {rate} Hz: set both to the recordings' rate")

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        frontend = getattr(model, "frontend", None)
        if frontend is None:
            return {}
        clip = {name: value[:1] for name, value in inputs_of(batch).items()}
        features, mask = frontend(**clip)
        weights = None
        if isinstance(getattr(model, "pool", None), AttentionBlock):
            with capture(model, "pool") as maps:
                model(**clip)
            pooled = maps["pool"][-1][0].float().mean(0)  # (N',)
            weights = F.interpolate(pooled.view(1, 1, -1), size=features.shape[-1], mode="nearest").view(-1)
        frames = features.shape[-1] if mask is None else int(mask[0].sum())
        return {"time_attention": [spectrogram_with_attention(features[0, :, :frames],
                                                              None if weights is None else weights[:frames])]}
