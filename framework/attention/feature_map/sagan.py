"""SAGAN self-attention (Zhang et al., ICML 2019): every position attends to all positions,
gated by a learned scalar that starts at 0; BigGAN's variant max-pools the keys and values."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput, ShapeError
from ..registry import register
from .non_local import dot_product_attention, tokens

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "sagan",
    kind="feature_map",
    placement="stage",
    category="vision / self-attention over positions (GAN)",
    paper="Zhang, Goodfellow, Metaxas & Odena, Self-Attention Generative Adversarial Networks, ICML 2019",
)
class SelfAttentionGAN(AttentionBlock):
    """SAGAN self-attention: every position attends to all positions, added through a gate at 0.

    With f, g, h, v 1 x 1 convolutions without biases (the paper's W_f, W_g, W_h, W_v), for
    positions i, j::

        s_ij    = f(x_i)^T g(x_j)              f, g: C -> C / reduction; no 1/sqrt(d) scaling
        beta_ij = softmax_j(s_ij)              (the paper writes beta_{j,i}, normalised over i)
        o_i     = v(sum_j beta_ij h(x_j))      h: C -> C / value_reduction, v: back to C
        y_i     = gamma o_i + x_i              gamma a learned scalar, 0 at init

    The paper gives f, g and h C / 8 channels (``reduction = value_reduction = 8``). BigGAN's
    block (Brock et al., ICLR 2019), like the SAGAN authors' code, max-pools g(x) and h(x) by 2
    (``pool=True``: N' = floor(H/2) floor(W/2) keys) and gives h C / 2 channels
    (``value_reduction=2``).

    Beside the library's other blocks over all positions (the same unscaled softmax):
    ``non_local`` has theta, phi and g of C / 2 channels with biases and ends in BN(W_z y) + x
    with the BatchNorm's weight at 0; ``danet_position`` is this block with biases, h of C
    channels and no v. The GAN's spectral normalisation is the caller's: wrap the block's
    convolutions in ``torch.nn.utils.parametrizations.spectral_norm``.

    Args:
        channels: input channels C.
        reduction: f and g have max(C // reduction, 1) channels.
        value_reduction: h has max(C // value_reduction, 1) channels.
        pool: max-pool the keys and values by 2 in each direction (needs H, W >= 2).

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, HW, N'))``, N' = HW without ``pool``.

    Captured weights: the (B, HW, N') softmax beta, one record per call (probe rows from f and g).

    Paper: Zhang, Goodfellow, Metaxas & Odena, "Self-Attention Generative Adversarial Networks",
    ICML 2019.
    """

    gives_probe_rows = True
    backends = ("sdpa", "eager")  # fused scaled_dot_product_attention; explicit softmax (framework.attention.backends)

    def __init__(
        self,
        channels: PositiveInt,
        reduction: PositiveInt = 8,
        value_reduction: PositiveInt = 8,
        pool: bool = False,
    ) -> None:
        super().__init__()
        if reduction < 1 or value_reduction < 1:
            raise ValueError(
                f"sagan: reduction and value_reduction must be at least 1, got {reduction} and {value_reduction}"
            )
        self.channels, self.pool = channels, pool
        inner, values = max(channels // reduction, 1), max(channels // value_reduction, 1)
        self.f = nn.Conv2d(channels, inner, 1, bias=False)
        self.g = nn.Conv2d(channels, inner, 1, bias=False)
        self.h = nn.Conv2d(channels, values, 1, bias=False)
        self.v = nn.Conv2d(values, channels, 1, bias=False)
        self.pooling = nn.MaxPool2d(2) if pool else nn.Identity()
        self.gamma = nn.Parameter(torch.zeros(1))

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        (height, width) = grid = tuple(x.shape[2:])
        if self.pool and min(grid) < 2:
            raise ShapeError(f"sagan: pool=True halves the keys' grid, so x needs H, W >= 2, got {tuple(x.shape)}")
        q, k, v = tokens(self.f(x)), tokens(self.pooling(self.g(x))), tokens(self.pooling(self.h(x)))
        keys = (height // 2, width // 2) if self.pool else grid
        y, weights = dot_product_attention(q, k, v, self, self.wants_weights(need_weights), grids=(grid, keys))
        out = x + self.gamma * self.v(y.transpose(1, 2).unflatten(2, grid))
        return self.finish(out, weights, need_weights, queries=grid, keys=keys)
