"""Semantic segmentation: a dilated ResNet (output stride 8) and an attention head, as in CCNet.

::

    x (B, 3, H, W) -> ResNet, stages 3 and 4 dilated -> f3 (B, C3, H/8, W/8), f4 (B, C4, H/8, W/8)
    head(f4) -> (B, K, H/8, W/8) -> bilinear upsampling -> logits (B, K, H, W)
    aux(f3)  -> (B, K, H/8, W/8) -> bilinear upsampling -> aux logits (training only)

The head is the same for every block, so that models differ only in the block: ``criss_cross``
is CCNet's RCCA (recurrence R = 2), ``danet`` DANet's position + channel attention,
``non_local`` the non-local block, and ``none`` the plain FCN baseline of the same size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.attention import FeatureMapBlock
from framework.data.sizes import require_sizes
from framework.values import Fraction, PositiveInt

from .resnet import create_resnet, make_block, width_args


def conv_bn_relu(in_channels: int, out_channels: int, kernel_size: int = 3) -> nn.Sequential:
    """Convolution (same padding, no bias), BatchNorm, ReLU."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
    )


class AttentionHead(nn.Module):
    """CCNet's head around any feature-map block (Huang et al., ICCV 2019, Fig. 2)::

        y = conv3x3(block(conv3x3(x)))                    (B, C', h, w),  C' = C // 4
        logits = conv1x1(dropout(conv3x3([x, y])))        (B, K, h, w)

    Args:
        in_channels: C, the backbone's last stage.
        num_classes: K.
        attention: the block between the two convolutions (``none``: an FCN head).
        inner_channels: C' (default C // 4, 512 for a ResNet-50 as in CCNet).
        dropout: Dropout2d before the classifier (CCNet: 0.1).
        attention_args: keyword arguments of the block (``{"recurrence": 2}`` for criss-cross),
            passed through as they are.
    """

    def __init__(
        self,
        in_channels: PositiveInt,
        num_classes: PositiveInt,
        attention: FeatureMapBlock = "criss_cross",
        inner_channels: Optional[PositiveInt] = None,
        dropout: Fraction = 0.1,
        attention_args: Optional[dict[str, Any]] = None,
    ) -> None:
        super().__init__()
        inner = inner_channels or in_channels // 4
        self.reduce = conv_bn_relu(in_channels, inner)
        self.attention = make_block(attention, inner, attention_args)
        self.expand = conv_bn_relu(inner, inner)
        self.bottleneck = conv_bn_relu(in_channels + inner, inner)
        self.classifier = nn.Sequential(nn.Dropout2d(dropout), nn.Conv2d(inner, num_classes, 1))

    def forward(self, x: Tensor) -> Tensor:
        y = self.expand(self.attention(self.reduce(x)))
        return self.classifier(self.bottleneck(torch.cat([x, y], dim=1)))


class SegmentationOutput(NamedTuple):
    """Logits (B, K, H, W) at the input size, and the auxiliary logits (training only, else None)."""

    logits: Tensor
    aux: Optional[Tensor] = None


class SegmentationNet(nn.Module):
    """Dilated timm ResNet + :class:`AttentionHead` + the auxiliary FCN head on stage 3.

    Args:
        num_classes: K.
        attention: the head's block: ``criss_cross`` (CCNet), ``danet``, ``non_local``,
            ``none`` (FCN baseline), or any feature-map block.
        backbone: timm ResNet name (``resnet50`` in the papers; ``resnet18`` for the CPU).
        output_stride: 8 (stages 3 and 4 dilated, as in CCNet and DANet), 16 or 32.
        channels, stem_width: backbone widths (timm's defaults when None).
        in_chans: input channels.
        inner_channels, dropout, attention_args: of the head, see :class:`AttentionHead`.
        aux: compute the auxiliary head on stage 3 in training (its loss weight is the task's).
        pretrained: ImageNet weights for the backbone (downloads them; off by default).

    Shapes: x (B, in_chans, H, W) -> :class:`SegmentationOutput` with logits (B, K, H, W).
    """

    def __init__(
        self,
        num_classes: Optional[PositiveInt] = None,
        attention: FeatureMapBlock = "criss_cross",
        backbone: str = "resnet50",
        output_stride: Literal[8, 16, 32] = 8,
        channels: Optional[Sequence[PositiveInt]] = None,
        stem_width: Optional[PositiveInt] = None,
        in_chans: PositiveInt = 3,
        inner_channels: Optional[PositiveInt] = None,
        dropout: Fraction = 0.1,
        attention_args: Optional[dict[str, Any]] = None,
        aux: bool = True,
        pretrained: bool = False,
    ) -> None:
        require_sizes("model", num_classes=num_classes)
        super().__init__()
        self.output_stride = output_stride
        self.backbone = create_resnet(
            backbone,
            features_only=True,
            out_indices=(3, 4),
            output_stride=output_stride,
            in_chans=in_chans,
            pretrained=pretrained,
            **width_args(channels, stem_width),
        )
        stage3, stage4 = self.backbone.feature_info.channels()
        self.head = AttentionHead(stage4, num_classes, attention, inner_channels, dropout, attention_args)
        self.aux_head = (
            nn.Sequential(
                conv_bn_relu(stage3, stage3 // 2), nn.Dropout2d(dropout), nn.Conv2d(stage3 // 2, num_classes, 1)
            )
            if aux
            else None
        )

    def forward(self, x: Tensor) -> SegmentationOutput:
        if x.ndim != 4:
            raise ValueError(f"SegmentationNet: x must have shape (B, C, H, W), got {tuple(x.shape)}")
        size = x.shape[-2:]
        f3, f4 = self.backbone(x)
        logits = F.interpolate(self.head(f4), size=size, mode="bilinear", align_corners=False)
        if not (self.training and self.aux_head is not None):
            return SegmentationOutput(logits)
        return SegmentationOutput(
            logits, F.interpolate(self.aux_head(f3), size=size, mode="bilinear", align_corners=False)
        )
