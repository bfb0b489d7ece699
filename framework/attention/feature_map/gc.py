"""Global context block (GCNet): one attention-pooled context vector, transformed and added everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register
from .se import bottleneck_width

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "gc",
    kind="feature_map",
    placement="block",
    category="vision / global context",
    paper="Cao, Xu, Lin, Wei & Hu, ICCVW 2019",
    aliases=("gca",),
)
class GlobalContext(AttentionBlock):
    """Global context block: softmax attention pooling over positions, a bottleneck, a broadcast add.

    With W_k a 1 x 1 convolution to one channel (with bias) and j over the HW positions::

        a_j       = softmax_j(W_k x_j)                              (B, HW)
        context   = sum_j a_j x_j                                   (B, C)
        transform = W2 relu(LayerNorm(W1 context + b1)) + b2        (B, C), W2 and b2 0 at init
        out       = x + transform                                   broadcast over H and W

    The query-independent context makes it a non-local block at SE cost; the zero W2
    makes the block the identity at init. This is timm's ``gca`` (its alias here); timm's
    ``gc`` fuses the context by a sigmoid scale instead of the paper's add.

    Args:
        channels: input channels C.
        reduction, min_hidden, hidden: the bottleneck W1 has ``bottleneck_width(C, reduction,
            min_hidden, hidden)`` features (the rule SE, CBAM and GC share).

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, HW))``.

    Captured weights: the (B, HW) pooling weights a, one record per call.

    Paper: Cao, Xu, Lin, Wei & Hu, "GCNet: Non-local Networks Meet Squeeze-Excitation
    Networks and Beyond", ICCV Workshops 2019.
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
        self.mask = nn.Conv2d(channels, 1, 1)
        self.fc1 = nn.Linear(channels, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, channels)
        nn.init.zeros_(self.fc2.weight)
        nn.init.zeros_(self.fc2.bias)

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        weights = self.ablate(torch.softmax(self.mask(x).flatten(1), dim=-1))  # (B, HW)
        context = (x.flatten(2) @ weights.unsqueeze(-1)).squeeze(-1)  # (B, C)
        transform = self.fc2(torch.relu(self.norm(self.fc1(context))))
        return self.finish(x + transform[:, :, None, None], weights, need_weights, keys=tuple(x.shape[2:]))
