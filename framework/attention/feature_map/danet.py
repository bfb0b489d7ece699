"""DANet: position attention (over HW positions) and channel attention (over C channels)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..record import Record
from ..registry import register
from .non_local import dot_product_attention, tokens

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt

PAPER = "Fu et al., CVPR 2019"


@register(
    "danet_position",
    kind="feature_map",
    placement="stage",
    category="vision / spatial (position attention)",
    paper=PAPER,
)
class PositionAttention(AttentionBlock):
    """DANet position attention (PAM): every position attends to all positions, gated by gamma.

    With 1 x 1 convolutions Q, K (C -> C / reduction) and V (C -> C), biases included::

        a_ij = softmax_j(Q(x)_i . K(x)_j)          no 1/sqrt(d) scaling
        out  = gamma * sum_j a_ij V(x)_j + x       gamma a learned scalar, 0 at init

    Args:
        channels: input channels C.
        reduction: Q and K have max(C // reduction, 1) channels.

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, HW, HW))``.

    Captured weights: the (B, HW, HW) softmax a, one record per call.

    Paper: Fu, Liu, Tian, Li, Bao, Fang & Lu, "Dual Attention Network for Scene Segmentation",
    CVPR 2019.
    """

    def __init__(self, channels: PositiveInt, reduction: PositiveInt = 8) -> None:
        super().__init__()
        self.channels = channels
        inner = max(channels // reduction, 1)
        self.query = nn.Conv2d(channels, inner, 1)
        self.key = nn.Conv2d(channels, inner, 1)
        self.value = nn.Conv2d(channels, channels, 1)
        self.gamma = nn.Parameter(torch.zeros(1))

    gives_probe_rows = True
    backends = ("sdpa", "eager")  # fused scaled_dot_product_attention; explicit softmax (framework.attention.backends)

    def attend(
        self, x: Tensor, want: bool, recorder: Optional[AttentionBlock] = None
    ) -> tuple[Tensor, Optional[Tensor]]:
        """The gated attention term gamma * sum_j a_ij V(x)_j, without the residual, and a; the
        rows of a capture's probe pixels go to ``recorder`` (default this block)."""
        grid = tuple(x.shape[2:])
        out, weights = dot_product_attention(
            tokens(self.query(x)),
            tokens(self.key(x)),
            tokens(self.value(x)),
            self,
            want,
            grids=(grid, grid),
            recorder=recorder,
        )
        return self.gamma * out.transpose(1, 2).unflatten(2, x.shape[2:]), weights

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        out, weights = self.attend(x, self.wants_weights(need_weights))
        grid = tuple(x.shape[2:])
        return self.finish(x + out, weights, need_weights, queries=grid, keys=grid)


@register(
    "danet_channel", kind="feature_map", placement="stage", category="vision / channel (channel attention)", paper=PAPER
)
class ChannelAttention(AttentionBlock):
    """DANet channel attention (CAM): every channel attends to all channels, gated by beta.

    With X the (B, C, HW) input and no projections::

        E   = X X^T                                   (B, C, C)
        A   = softmax(rowmax(E) - E)                  over the last axis (official code)
        out = beta * A X + x                          beta a learned scalar, 0 at init

    softmax is shift-invariant, so A = softmax(-E): a channel draws most from the channels
    least similar to it. That is the form computed here.

    Args:
        channels: input channels C.

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, C, C))``.

    Captured weights: the (B, C, C) softmax A, one record per call.

    Paper: Fu, Liu, Tian, Li, Bao, Fang & Lu, "Dual Attention Network for Scene Segmentation",
    CVPR 2019.
    """

    def __init__(self, channels: PositiveInt) -> None:
        super().__init__()
        self.channels = channels
        self.beta = nn.Parameter(torch.zeros(1))

    def attend(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The gated attention term beta * A X, without the residual, and A."""
        flat = x.flatten(2)
        weights = self.ablate(torch.softmax(-(flat @ flat.transpose(1, 2)), dim=-1))
        return self.beta * (weights @ flat).view_as(x), weights

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        out, weights = self.attend(x)
        return self.finish(x + out, weights if self.wants_weights(need_weights) else None, need_weights)


@register(
    "danet", kind="feature_map", placement="stage", category="vision / channel + spatial (dual attention)", paper=PAPER
)
class DualAttention(AttentionBlock):
    """DANet dual attention: position and channel attention added to one residual.

    ::

        out = x + alpha * P(x) + beta * C(x)

    where P(x) = sum_j a_ij V(x)_j and C(x) = A X are the two branches of
    ``danet_position`` and ``danet_channel`` without their residuals; alpha is
    ``position.gamma`` and beta is ``channel.beta``, both 0 at init, so the block starts
    as the identity.

    Args:
        channels: input channels C.
        reduction: Q and K of the position branch have max(C // reduction, 1) channels.

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights=(position (B, HW, HW), channel (B, C, C)))``.

    Captured weights: the tuple (position weights (B, HW, HW), channel weights (B, C, C)),
    one record per call; a capture with probes gets the probe pixels' rows of the position
    branch, computed from Q and K.

    Paper: Fu, Liu, Tian, Li, Bao, Fang & Lu, "Dual Attention Network for Scene Segmentation",
    CVPR 2019.
    """

    def __init__(self, channels: PositiveInt, reduction: PositiveInt = 8) -> None:
        super().__init__()
        self.channels = channels
        self.position = PositionAttention(channels, reduction)
        self.channel = ChannelAttention(channels)

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        want = self.wants_weights(need_weights)
        position, position_weights = self.position.attend(x, want, self)  # the branches ablate their own weights
        channel, channel_weights = self.channel.attend(x)
        grid = tuple(x.shape[2:])
        return self.finish(
            x + position + channel,
            (position_weights, channel_weights) if want else None,
            need_weights,
            queries=grid,
            keys=grid,
        )

    gives_probe_rows = True
    backends = ("sdpa", "eager")  # fused scaled_dot_product_attention; explicit softmax (framework.attention.backends)

    def grid_weights(self, record: Record) -> Optional[Tensor]:
        """The position branch's weights (the channel branch relates no pixels)."""
        return super().grid_weights(replace(record, weights=record.weights[0]))

    def looks(self, record: Record, query: tuple[int, ...] = ()) -> Optional[Tensor]:
        """Where a pixel looks in the position branch (the channel branch relates no pixels)."""
        return super().looks(record if record.probes is not None else replace(record, weights=record.weights[0]), query)
