"""The spectrogram Transformer: a convolutional stem, self-attention over frames, attention pooling over time."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from framework.attention import PoolingBlock, SequenceBlock, build
from framework.data.sizes import require_sizes
from framework.layers import AttentionEncoder, PositionalEncoding
from framework.values import Fraction, NonNegativeInt, PositiveInt

from .frames import shrink_mask
from .frontend import Frontend


class ConvSubsampling(nn.Module):
    """The convolutional stem of speech Transformers (ESPnet's Conv2dSubsampling): ``layers``
    3x3 convolutions of stride 2 with ReLU over the (F, N) spectrogram, then a linear map of
    each frame's C * F' features to D. Local time-frequency patterns (a rising pitch, an onset)
    become frame features; the frames after the clip's end are zeroed after every layer, so
    no padding leaks into real frames.

    Shapes: x (B, F, N), mask (B, N) or None -> (B, N', D), mask (B, N') with
    N' = ceil(N / 2^layers) and F' = ceil(F / 2^layers).
    """

    def __init__(
        self, num_features: PositiveInt, dim: PositiveInt, channels: PositiveInt = 16, layers: NonNegativeInt = 2
    ) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv2d(1 if i == 0 else channels, channels, 3, stride=2, padding=1) for i in range(layers)
        )
        bins = num_features
        for _ in range(layers):
            bins = (bins + 1) // 2
        self.project = nn.Linear((channels if layers else 1) * bins, dim)

    def forward(self, x: Tensor, mask: Optional[Tensor]) -> tuple[Tensor, Optional[Tensor]]:
        x = x.unsqueeze(1)  # (B, 1, F, N)
        for conv in self.convs:
            x = torch.relu(conv(x))
            mask = shrink_mask(mask, 2, x.shape[-1])
            if mask is not None:
                x = x * mask[:, None, None, :]
        return self.project(x.flatten(1, 2).transpose(1, 2)), mask


class SpectrogramTransformer(nn.Module):
    """Transformer over spectrogram frames with attention pooling over time.

    ::

        h = ConvSubsampling(spectrogram) + positions       (B, N / 2^stem_layers, D)
        h = AttentionEncoder(h, mask)                       pre-norm layers over ``attention``
        logits = W pool(h, mask) + b                         ``pooling`` over time

    Args:
        num_classes: K.
        frontend: the waveform front end (default :class:`Frontend` ()).
        dim, depth: width D and encoder layers.
        attention: the sequence block of every layer (``mhsa``, ``local`` ... or ``none``).
        pooling: the pooling block over time (``pooling``, or ``none`` for the masked mean).
        stem_channels, stem_layers: the convolutional stem (each layer halves F and N).
        max_len: longest frame sequence after the stem.
        dropout: in the encoder, after the positions and before the head.

    Shapes: waveform (B, T), lengths (B,) -> logits (B, K).
    """

    def __init__(
        self,
        num_classes: Optional[PositiveInt] = None,
        frontend: Optional[Frontend] = None,
        dim: PositiveInt = 64,
        depth: NonNegativeInt = 2,
        attention: SequenceBlock = "mhsa",
        pooling: PoolingBlock = "pooling",
        stem_channels: PositiveInt = 16,
        stem_layers: NonNegativeInt = 2,
        max_len: PositiveInt = 512,
        dropout: Fraction = 0.1,
    ) -> None:
        require_sizes("model", num_classes=num_classes)
        super().__init__()
        self.frontend = frontend or Frontend()
        self.stem = ConvSubsampling(self.frontend.num_features, dim, stem_channels, stem_layers)
        self.positions = PositionalEncoding(dim, max_len, dropout=dropout)
        self.encoder = AttentionEncoder(dim, depth, attention, dropout=dropout)
        self.pool = build(pooling, dim, kind="pooling")
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(dim, num_classes))

    def forward(self, waveform: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        features, mask = self.frontend(waveform, lengths)
        x, mask = self.stem(features, mask)
        x = self.encoder(self.positions(x), mask)
        return self.head(self.pool(x, mask))
