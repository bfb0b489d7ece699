"""Spectrogram classifiers: a CNN, a Transformer and a CRNN, each with its blocks by registry name.

All take a batch's ``waveform`` (B, T) and ``lengths`` (B,) and return logits (B, K); the
:class:`~domains.audio.frontend.Frontend` inside each turns waveforms into (B, F, N) frames.
The Transformer and the CRNN summarise the frames with a pooling block (``pooling``: the
registry's attention pooling; ``none``: the mean of the real frames) that masks the
padding, and name it ``pool``, which the task's time-attention picture reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import torch
from torch import Tensor, nn

from framework.attention import FeatureMapBlock, NoAttention, PoolingBlock, SequenceBlock, build
from framework.layers import AttentionEncoder, AttentiveConvNet, ConvStage, PositionalEncoding, masked_mean, run_packed

from .frontend import Frontend


def shrink_mask(mask: Optional[Tensor], factor: int, length: int) -> Optional[Tensor]:
    """The (B, N) frame mask after a stride-``factor`` reduction to ``length`` frames:
    a reduced frame is real if its first input frame is (the padding sits at the end)."""
    return None if mask is None else mask[:, ::factor][:, :length]


def pool_frames(pool: nn.Module, x: Tensor, mask: Optional[Tensor]) -> Tensor:
    """(B, N, D) frames -> (B, D): ``pool(x, mask)``, or the mean of the real frames when the
    pooling block is ``none``."""
    if not isinstance(pool, NoAttention):
        return pool(x, mask)
    return x.mean(1) if mask is None else masked_mean(x, mask)


def check_frequency_bins(frontend: Frontend, stages: int) -> None:
    """The frequency axis must survive ``stages`` halvings."""
    if frontend.num_features < 2**stages:
        raise ValueError(f"model.widths: {stages} stages halve the frequency axis {stages} times, but the front end "
                         f"gives {frontend.num_features} bins; raise model.frontend.n_mels (or n_mfcc) to at least "
                         f"{2**stages} or use fewer stages")


class SpectrogramCNN(nn.Module):
    """Log-mel CNN: the front end, then :class:`~framework.layers.AttentiveConvNet` over the
    (B, 1, F, N) spectrogram, with the feature-map block ``attention`` in every stage
    (``se``, ``cbam``, ``criss_cross`` ... or ``none``) as in the vision domain.

    The CNN does not read ``lengths`` beyond the front end: padded frames enter it as zeros
    (the clip mean), as an image's border does.

    Args:
        num_classes: K.
        frontend: the waveform front end (default :class:`Frontend` ()).
        widths: channels of the stages (each halves F and N).
        attention: the feature-map block of every stage.
        dropout: before the linear head.

    Shapes: waveform (B, T), lengths (B,) -> logits (B, K).
    """

    def __init__(self, num_classes: int, frontend: Optional[Frontend] = None, widths: Sequence[int] = (16, 32, 64),
                 attention: FeatureMapBlock = "none", dropout: float = 0.1) -> None:
        super().__init__()
        self.frontend = frontend or Frontend()
        check_frequency_bins(self.frontend, len(widths))
        self.net = AttentiveConvNet(1, num_classes, widths, attention, dropout)

    def forward(self, waveform: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        features, _ = self.frontend(waveform, lengths)
        return self.net(features.unsqueeze(1))


class ConvSubsampling(nn.Module):
    """The convolutional stem of speech Transformers (ESPnet's Conv2dSubsampling): ``layers``
    3x3 convolutions of stride 2 with ReLU over the (F, N) spectrogram, then a linear map of
    each frame's C * F' features to D. Local time-frequency patterns (a rising pitch, an onset)
    become frame features; the frames after the clip's end are zeroed after every layer, so
    no padding leaks into real frames.

    Shapes: x (B, F, N), mask (B, N) or None -> (B, N', D), mask (B, N') with
    N' = ceil(N / 2^layers) and F' = ceil(F / 2^layers).
    """

    def __init__(self, num_features: int, dim: int, channels: int = 16, layers: int = 2) -> None:
        super().__init__()
        if layers < 0:
            raise ValueError(f"model.stem_layers must be >= 0, got {layers}")
        self.convs = nn.ModuleList(nn.Conv2d(1 if i == 0 else channels, channels, 3, stride=2, padding=1)
                                   for i in range(layers))
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

    def __init__(self, num_classes: int, frontend: Optional[Frontend] = None, dim: int = 64, depth: int = 2,
                 attention: SequenceBlock = "mhsa", pooling: PoolingBlock = "pooling", stem_channels: int = 16,
                 stem_layers: int = 2, max_len: int = 512, dropout: float = 0.1) -> None:
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
        return self.head(pool_frames(self.pool, x, mask))


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

    def __init__(self, num_classes: int, frontend: Optional[Frontend] = None, widths: Sequence[int] = (16, 32),
                 attention: FeatureMapBlock = "none", hidden: int = 64, pooling: PoolingBlock = "pooling",
                 dropout: float = 0.1) -> None:
        super().__init__()
        if not widths:
            raise ValueError("model.widths must name at least one stage width")
        self.frontend = frontend or Frontend()
        check_frequency_bins(self.frontend, len(widths))
        channels = [1, *widths]
        self.stages = nn.Sequential(*(ConvStage(a, b, attention) for a, b in zip(channels, channels[1:])))
        self.reduction = 2 ** len(widths)
        self.rnn = nn.GRU(widths[-1] * (self.frontend.num_features // self.reduction), hidden, batch_first=True,
                          bidirectional=True)
        self.pool = build(pooling, 2 * hidden, kind="pooling")
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(2 * hidden, num_classes))

    def forward(self, waveform: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        features, mask = self.frontend(waveform, lengths)
        x = self.stages(features.unsqueeze(1))  # (B, C, F', N')
        x = x.flatten(1, 2).transpose(1, 2)  # (B, N', C F')
        mask = shrink_mask(mask, self.reduction, x.shape[1])
        x = self.rnn(x)[0] if mask is None else run_packed(self.rnn, x, mask.sum(1))[0]
        return self.head(pool_frames(self.pool, x, mask))
