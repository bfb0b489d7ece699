"""CBAM: channel attention from average- and max-pooled descriptors, then spatial attention."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register
from .se import bottleneck_width
from .spatial import SpatialAttention

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "cbam",
    kind="feature_map",
    placement="block",
    category="vision / channel + spatial",
    paper="Woo, Park, Lee & Kweon, ECCV 2018",
)
class CBAM(AttentionBlock):
    """CBAM: a channel gate from avg- and max-pooled features, then a spatial gate.

    ::

        MLP(z) = W2 relu(W1 z + b1) + b2                          shared by both pools
        s_c    = sigmoid(MLP(mean_{h,w} x) + MLP(max_{h,w} x))    (B, C)
        y      = x * s_c                                          broadcast over H, W
        out    = SpatialAttention(y)                              see ``spatial``

    Args:
        channels: input channels C.
        reduction, min_hidden, hidden: the shared MLP has ``bottleneck_width(C, reduction,
            min_hidden, hidden)`` hidden features (the rule SE, CBAM and GC share).
        kernel_size: k of the spatial module's k x k convolution.

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights=(channel gate (B, C), spatial gate (B, H, W)))``.

    Captured weights: the tuple (channel gate (B, C), spatial gate (B, H, W)), one record
    per call (the ``spatial`` sub-block records its gate too when a capture watches it).

    Paper: Woo, Park, Lee & Kweon, "CBAM: Convolutional Block Attention Module", ECCV 2018.
    """

    def __init__(
        self,
        channels: PositiveInt,
        reduction: PositiveInt = 16,
        kernel_size: PositiveInt = 7,
        min_hidden: PositiveInt = 8,
        hidden: Optional[PositiveInt] = None,
    ) -> None:
        super().__init__()
        self.channels = channels
        hidden = bottleneck_width(channels, reduction, min_hidden, hidden)
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, channels)
        self.spatial = SpatialAttention(channels, kernel_size)

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        pooled = torch.stack([x.mean((2, 3)), x.amax((2, 3))])  # (2, B, C), one MLP pass for both
        gate = self.ablate(torch.sigmoid(self.fc2(torch.relu(self.fc1(pooled))).sum(0)), normalised=False)
        y = x * gate[:, :, None, None]
        if not self.wants_weights(need_weights):
            return self.spatial(y)
        out, spatial_gate, _ = self.spatial(y, need_weights=True)  # the sub-block ablates its own gate
        return self.finish(out, (gate, spatial_gate), need_weights)
