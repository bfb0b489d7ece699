"""Clip classification with a picture of where the model listened: attention over time frames."""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from framework.attention import AttentionBlock, capture
from framework.tasks import Classification, inputs_of

from .pictures import spectrogram_with_attention


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
        super().check(model, data)

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
            pooled = maps["pool"][-1].weights[0].float().mean(0)  # (N',)
            weights = F.interpolate(pooled.view(1, 1, -1), size=features.shape[-1], mode="nearest").view(-1)
        frames = features.shape[-1] if mask is None else int(mask[0].sum())
        return {"time_attention": [spectrogram_with_attention(features[0, :, :frames],
                                                              None if weights is None else weights[:frames])]}
