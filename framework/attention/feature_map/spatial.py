"""Spatial attention (CBAM's spatial module): every position scaled by a gate over channel statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "spatial",
    kind="feature_map",
    placement="block",
    category="vision / spatial",
    paper="Woo, Park, Lee & Kweon, ECCV 2018",
)
class SpatialAttention(AttentionBlock):
    """Spatial attention: positions rescaled by a k x k convolution of channel mean and max.

    ::

        m   = [mean_c x[:, c]; max_c x[:, c]]       (B, 2, H, W)
        s   = sigmoid(conv_kxk(m) + b)              (B, 1, H, W), zero padding keeps H, W
        out = x * s                                 s broadcast over C

    CBAM's official code adds a BatchNorm after the convolution; at inference it folds
    into the convolution's weight and bias.

    Args:
        channels: input channels C (checked; the block has no per-channel parameters).
        kernel_size: k, odd.

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, H, W))``.

    Captured weights: the (B, H, W) spatial gate s, one record per call.

    Paper: Woo, Park, Lee & Kweon, "CBAM: Convolutional Block Attention Module", ECCV 2018.
    """

    def __init__(self, channels: PositiveInt, kernel_size: PositiveInt = 7) -> None:
        super().__init__()
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"{self.block_name}: kernel_size must be a positive odd number, got {kernel_size}")
        self.channels = channels
        self.conv = nn.Conv2d(2, 1, kernel_size, padding=kernel_size // 2)

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        stats = torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], dim=1)
        gate = torch.sigmoid(self.conv(stats)).squeeze(1)  # (B, H, W)
        if self.ablation is not None:  # a gate over the positions: ablated over all of them
            gate = self.ablate(gate.flatten(1), normalised=False).view_as(gate)
        return self.finish(x * gate.unsqueeze(1), gate, need_weights)
