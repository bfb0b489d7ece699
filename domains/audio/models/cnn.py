"""The log-mel CNN: the core's AttentiveConvNet, with a feature-map block in every stage, over the spectrogram."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from torch import Tensor, nn

from framework.attention import FeatureMapBlock
from framework.data.sizes import require_sizes
from framework.layers import AttentiveConvNet
from framework.values import Fraction, NonNegativeInt, PositiveInt

from .frames import check_frequency_bins
from .frontend import Frontend


class SpectrogramCNN(nn.Module):
    """Log-mel CNN: the front end, then :class:`~framework.layers.AttentiveConvNet` over the
    (B, 1, F, N) spectrogram, with the feature-map block ``attention`` in every stage
    (``se``, ``cbam``, ``criss_cross`` ... or ``none``) as in the vision domain, or in the
    ``attention_stages`` only.

    The CNN does not read ``lengths`` beyond the front end: padded frames enter it as zeros
    (the clip mean), as an image's border does.

    Args:
        num_classes: K.
        frontend: the waveform front end (default :class:`Frontend` ()).
        widths: channels of the stages (each halves F and N).
        attention: the feature-map block of every stage.
        dropout: before the linear head.
        attention_stages: the stages (0 the first) that hold the block; all by default (the
            non-local paper's placement: the later ones, ``[1, 2]`` of three).

    Shapes: waveform (B, T), lengths (B,) -> logits (B, K).
    """

    def __init__(
        self,
        num_classes: Optional[PositiveInt] = None,
        frontend: Optional[Frontend] = None,
        widths: Sequence[PositiveInt] = (16, 32, 64),
        attention: FeatureMapBlock = "none",
        dropout: Fraction = 0.1,
        attention_stages: Optional[Sequence[NonNegativeInt]] = None,
    ) -> None:
        require_sizes("model", num_classes=num_classes)
        super().__init__()
        self.frontend = frontend or Frontend()
        check_frequency_bins(self.frontend, len(widths))
        self.net = AttentiveConvNet(1, num_classes, widths, attention, dropout, attention_stages)

    def forward(self, waveform: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        features, _ = self.frontend(waveform, lengths)
        return self.net(features.unsqueeze(1))
