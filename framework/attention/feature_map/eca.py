"""Efficient channel attention: an SE gate whose MLP is a small 1-D convolution over channels."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import AnyReal, PositiveFloat, PositiveInt


def eca_kernel_size(channels: int, gamma: float = 2, beta: float = 1) -> int:
    """ECA's adaptive kernel size: the odd number nearest |log2(C) / gamma + beta / gamma|.

    Ties (an even value) go up, as in the official code: C = 16 -> 3, 256 -> 5, 2048 -> 7.
    """
    t = abs(math.log2(channels) / gamma + beta / gamma)
    return 2 * math.floor(t / 2) + 1


@register("eca", kind="feature_map", placement="block", category="vision / channel", paper="Wang et al., CVPR 2020")
class EfficientChannelAttention(AttentionBlock):
    """Efficient channel attention: a sigmoid gate from a 1-D convolution over channel means.

    ::

        z   = mean_{h,w} x[:, :, h, w]                       (B, C)
        s_c = sigmoid(sum_{i=-p..p} w_i z_{c+i})             zero padding, p = (k - 1) / 2
        out = x * s                                          s broadcast over H and W

    Each channel's gate sees only its k neighbours along the channel axis (no bias,
    no dimensionality reduction).

    Args:
        channels: input channels C.
        kernel_size: k, odd. ``None`` derives it from C with :func:`eca_kernel_size`;
            an explicit value is used as given (timm's ``EcaModule`` recomputes it
            from ``channels`` and ignores this argument).
        gamma, beta: the mapping of C to k when ``kernel_size`` is ``None``.

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, C))``.

    Captured weights: the (B, C) channel gate s, one record per call.

    Paper: Wang, Wu, Zhu, Li, Zuo & Hu, "ECA-Net: Efficient Channel Attention for Deep
    Convolutional Neural Networks", CVPR 2020.
    """

    def __init__(
        self,
        channels: PositiveInt,
        kernel_size: Optional[PositiveInt] = None,
        gamma: PositiveFloat = 2,
        beta: AnyReal = 1,
    ) -> None:
        super().__init__()
        self.channels = channels
        k = eca_kernel_size(channels, gamma, beta) if kernel_size is None else kernel_size
        if k < 1 or k % 2 == 0:
            raise ValueError(f"eca: kernel_size must be a positive odd number, got {k}")
        self.kernel_size = k
        self.conv = nn.Conv1d(1, 1, k, padding=k // 2, bias=False)

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        gate = torch.sigmoid(self.conv(x.mean((2, 3)).unsqueeze(1))).squeeze(1)  # (B, C)
        gate = self.ablate(gate, normalised=False)
        return self.finish(x * gate[:, :, None, None], gate, need_weights)
