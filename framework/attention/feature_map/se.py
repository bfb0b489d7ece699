"""Squeeze-and-excitation: every channel scaled by a gate computed from all channel means."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


def bottleneck_width(channels: int, reduction: int = 16, min_hidden: int = 8, hidden: Optional[int] = None) -> int:
    """The hidden width of a gate's bottleneck MLP: ``hidden`` when given, else C // reduction,
    but at least ``min_hidden``.

    One rule for SE, CBAM's channel gate and GC: the papers' C / r (r = 16), with a floor so
    that the narrow stages of small networks (C = 16 or 32) keep a usable bottleneck (timm
    rounds to multiples of 8 instead; CBAM's official code would give 1 or 2 features there).
    timm's ``rd_ratio`` and ``rd_channels`` are ``1 / reduction`` and ``hidden``.
    """
    if reduction < 1 or min_hidden < 1 or (hidden is not None and hidden < 1):
        raise ValueError(
            f"reduction, min_hidden and hidden must be at least 1, got {reduction}, {min_hidden} and {hidden}"
        )
    return hidden if hidden is not None else max(channels // reduction, min_hidden)


@register("se", kind="feature_map", placement="block", category="vision / channel", paper="Hu, Shen & Sun, CVPR 2018")
class SqueezeExcite(AttentionBlock):
    """Squeeze-and-excitation: channels rescaled by a sigmoid gate of their global averages.

    ::

        z   = mean_{h,w} x[:, :, h, w]                 squeeze, (B, C)
        s   = sigmoid(W2 relu(W1 z + b1) + b2)         excite, (B, C)
        out = x * s                                    s broadcast over H and W

    Args:
        channels: input channels C.
        reduction, min_hidden, hidden: the bottleneck W1 has ``bottleneck_width(C, reduction,
            min_hidden, hidden)`` features (the rule SE, CBAM and GC share; ``hidden``, when
            given, is the width itself).

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, C))``.

    Captured weights: the (B, C) channel gate s, one record per call.

    Paper: Hu, Shen & Sun, "Squeeze-and-Excitation Networks", CVPR 2018.
    """

    def __init__(
        self,
        channels: PositiveInt,
        reduction: PositiveInt = 16,
        min_hidden: PositiveInt = 8,
        hidden: Optional[PositiveInt] = None,
    ) -> None:
        super().__init__()
        self.channels = channels
        hidden = bottleneck_width(channels, reduction, min_hidden, hidden)
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, channels)

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        gate = self.ablate(torch.sigmoid(self.fc2(torch.relu(self.fc1(x.mean((2, 3)))))), normalised=False)
        return self.finish(x * gate[:, :, None, None], gate, need_weights)
