"""The CRNN: conv stages, a bidirectional GRU and attention pooling over time (weakly labelled clips)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from torch import Tensor, nn

from framework.attention import FeatureMapBlock, PoolingBlock, build
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.layers import ConvStage, run_packed
from framework.values import Fraction, PositiveInt

from .frames import check_frequency_bins, shrink_mask
from .frontend import Frontend


class CRNN(nn.Module):
    """Convolutional recurrent network with attention pooling over time, for weakly labelled
    clips (Xu, Kong, Wang & Plumbley, Attention and Localization Based on a Deep Convolutional
    Recurrent Model for Weakly Supervised Audio Tagging, Interspeech 2017).

    ::

        c = ConvStages(spectrogram)              (B, C, F / 2^k, N / 2^k)   ``attention`` in each stage
        h = BiGRU(c as frames of C * F / 2^k)    (B, N / 2^k, 2 H)           padding packed away
        logits = W pool(h, mask) + b             ``pooling`` over time

    Args:
        num_classes: K.
        frontend: the waveform front end (default :class:`Frontend` ()).
        widths: channels of the :class:`~framework.layers.ConvStage` s (each halves F and N).
        attention: the feature-map block of every stage (``none`` by default).
        hidden: H, GRU units per direction.
        pooling: the pooling block over time (``pooling``, or ``none`` for the masked mean).
        dropout: before the head.

    Shapes: waveform (B, T), lengths (B,) -> logits (B, K).
    """

    def __init__(
        self,
        num_classes: Optional[PositiveInt] = None,
        frontend: Optional[Frontend] = None,
        widths: Sequence[PositiveInt] = (16, 32),
        attention: FeatureMapBlock = "none",
        hidden: PositiveInt = 64,
        pooling: PoolingBlock = "pooling",
        dropout: Fraction = 0.1,
    ) -> None:
        require_sizes("model", num_classes=num_classes)
        super().__init__()
        if not widths:
            raise ConfigError("model.widths must name at least one stage width")
        self.frontend = frontend or Frontend()
        check_frequency_bins(self.frontend, len(widths))
        channels = [1, *widths]
        self.stages = nn.Sequential(*(ConvStage(a, b, attention) for a, b in zip(channels, channels[1:])))
        self.reduction = 2 ** len(widths)
        self.rnn = nn.GRU(
            widths[-1] * (self.frontend.num_features // self.reduction), hidden, batch_first=True, bidirectional=True
        )
        self.pool = build(pooling, 2 * hidden, kind="pooling")
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(2 * hidden, num_classes))

    def forward(self, waveform: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        features, mask = self.frontend(waveform, lengths)
        x = self.stages(features.unsqueeze(1))  # (B, C, F', N')
        x = x.flatten(1, 2).transpose(1, 2)  # (B, N', C F')
        mask = shrink_mask(mask, self.reduction, x.shape[1])
        x = self.rnn(x)[0] if mask is None else run_packed(self.rnn, x, mask.sum(1))[0]
        return self.head(self.pool(x, mask))
