"""A small CNN with a feature-map attention block in every stage (tiny images, spectrograms)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from torch import Tensor, nn

from ..attention import FeatureMapBlock, build
from ..data.sizes import require_sizes
from ..errors import ConfigError
from ..values import NonNegativeInt


class ConvStage(nn.Module):
    """Two 3x3 conv-BN-ReLU layers, the attention block, then 2x2 max pooling.

    Shapes: (B, C_in, H, W) -> (B, C_out, H // 2, W // 2).
    """

    def __init__(self, in_channels: int, out_channels: int, attention: FeatureMapBlock = "none") -> None:
        super().__init__()
        layers = []
        for channels in (in_channels, out_channels):
            layers += [
                nn.Conv2d(channels, out_channels, 3, padding=1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
            ]
        self.convs = nn.Sequential(*layers)
        self.attention = build(attention, out_channels, kind="feature_map")
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: Tensor) -> Tensor:
        return self.pool(self.attention(self.convs(x)))


class AttentiveConvNet(nn.Module):
    """Stages of :class:`ConvStage` (each halves H and W), global average pooling, a linear head.

    The same feature-map block (``se``, ``cbam``, ``criss_cross`` ... or ``none``) sits in
    every stage, after its convolutions, as SE and CBAM place theirs in a residual branch; or
    only in ``attention_stages``, as the non-local paper places its blocks in the later stages,
    where the maps are small (a block over all H W positions costs (H W)^2 in the first).

    Args:
        in_channels: input channels (1 for digits and spectrograms, 3 for colour images).
        num_classes: K.
        widths: output channels of the stages; their number is the number of stages.
        attention: the feature-map block of every stage.
        dropout: dropout before the head.
        attention_stages: the stages (0 the first) that hold the block; all by default.

    Shapes: x (B, in_channels, H, W) with H, W >= 2^stages -> logits (B, K).
    """

    def __init__(
        self,
        in_channels: Optional[int] = None,
        num_classes: Optional[int] = None,
        widths: Sequence[int] = (32, 64, 128),
        attention: FeatureMapBlock = "none",
        dropout: float = 0.0,
        attention_stages: Optional[Sequence[NonNegativeInt]] = None,
    ) -> None:
        require_sizes("model", in_channels=in_channels, num_classes=num_classes)
        super().__init__()
        if not widths:
            raise ConfigError("model.widths must name at least one stage width")
        held = range(len(widths)) if attention_stages is None else attention_stages
        beyond = [stage for stage in held if not 0 <= stage < len(widths)]
        if beyond:
            raise ConfigError(
                f"model.attention_stages: {len(widths)} stages (model.widths) are numbered 0 to {len(widths) - 1}, "
                f"got {beyond}"
            )
        channels = [in_channels, *widths]
        self.stages = nn.Sequential(
            *(
                ConvStage(a, b, attention if stage in held else "none")
                for stage, (a, b) in enumerate(zip(channels, channels[1:]))
            )
        )
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(widths[-1], num_classes)
        )

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise ValueError(f"AttentiveConvNet: x must have shape (B, C, H, W), got {tuple(x.shape)}")
        return self.head(self.stages(x))
