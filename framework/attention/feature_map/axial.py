"""Axial attention: multi-head self-attention along every row, then along every column.

Ho, Kalchbrenner, Weissenborn & Salimans (2019) factorise 2-D self-attention into 1-D
self-attention along each axis; Axial-DeepLab (Wang et al., ECCV 2020) stacks a height-axis
and a width-axis layer. Two passes connect every pair of pixels at O(HW (H + W) C) cost,
against O((HW)^2 C) for ``non_local``. Each pass is the fused ``scaled_dot_product_attention``
over the rows (or columns) as one batch of sequences: reshaped views, no loop over rows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..record import Record
from ..registry import register
from .non_local import dot_product_attention

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


class AxisPass(nn.Module):
    """One axial pass: multi-head self-attention along axis 2 of channels-last (B, A, L, C)
    maps, each of the B * A lines a sequence of L pixels; its own projections and gate."""

    def __init__(self, channels: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(channels, 3 * channels)  # W_Q, W_K, W_V: 1 x 1 convolutions on channels-last maps
        self.out = nn.Linear(channels, channels)  # W_O
        self.gamma = nn.Parameter(torch.zeros(1))

    def forward(self, t: Tensor, block: AttentionBlock, want: bool) -> tuple[Tensor, Optional[Tensor]]:
        """t + gamma W_O [attention along the lines], and the weights (B, h, A, L, L) when wanted."""
        batch, lines, length, channels = t.shape
        q, k, v = self.qkv(t).reshape(batch * lines, length, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        y, weights = dot_product_attention(q, k, v, block, want, scale=1 / math.sqrt(q.shape[-1]))
        y = y.transpose(1, 2).reshape(batch, lines, length, channels)
        if weights is not None:
            weights = weights.unflatten(0, (batch, lines)).transpose(1, 2)  # (B, h, A, L, L)
        return torch.addcmul(t, self.gamma, self.out(y)), weights


@register(
    "axial",
    kind="feature_map",
    placement="stage",
    category="vision / axial (row then column multi-head self-attention)",
    paper="Ho, Kalchbrenner, Weissenborn & Salimans, Axial Attention in Multidimensional Transformers, "
    "arXiv:1912.12180, 2019; Wang et al., Axial-DeepLab, ECCV 2020",
)
class AxialAttention(AttentionBlock):
    """Axial attention: multi-head self-attention along each row, then along each column.

    For pixel (i, j), h heads of d = C / h features; W_Q, W_K, W_V, W_O are 1 x 1 convolutions
    with biases, one set per pass::

        row pass     a_ij,l = softmax_l(q_ij . k_il / sqrt(d))          l = 1 .. W (row i)
                     y_ij   = x_ij + gamma_r W_O [sum_l a_ij,l v_il]_heads
        column pass  b_ij,m = softmax_m(q'_ij . k'_mj / sqrt(d))        m = 1 .. H (column j),
                     out_ij = y_ij + gamma_c W'_O [sum_m b_ij,m v'_mj]_heads   q', k', v' from y

    gamma_r and gamma_c start at 0, so the block starts as the identity. After both passes
    every pixel has gathered from every pixel (through its row, then its column). There is no
    positional term: Ho et al. add positions to the input once, and Axial-DeepLab's
    position-sensitive relative terms are not part of this block.

    Args:
        channels: C, the input and output channels.
        num_heads: h (C must be divisible by it; Axial-DeepLab: 8).

    Shapes:
        x (B, C, H, W) -> (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, (row weights, column weights))``.

    Captured weights:
        a tuple, one record per call: the row pass's (B, h, H, W, W) weights (pixel (i, j) over
        the W pixels of row i), then the column pass's (B, h, H, W, H) weights (pixel (i, j)
        over the H pixels of column j). :meth:`looks` draws both as one cross.

    Paper: Ho, Kalchbrenner, Weissenborn & Salimans, "Axial Attention in Multidimensional
    Transformers", arXiv:1912.12180, 2019; Wang, Zhu, Green, Adam, Yuille & Chen,
    "Axial-DeepLab: Stand-Alone Axial-Attention for Panoptic Segmentation", ECCV 2020.
    """

    def __init__(self, channels: PositiveInt, num_heads: PositiveInt = 8) -> None:
        super().__init__()
        if num_heads < 1 or channels % num_heads:
            raise ValueError(f"axial: channels={channels} must be divisible by num_heads={num_heads}")
        self.channels = channels
        self.rows, self.columns = AxisPass(channels, num_heads), AxisPass(channels, num_heads)

    backends = ("sdpa", "eager")  # fused scaled_dot_product_attention; explicit softmax (framework.attention.backends)

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        want = self.wants_weights(need_weights)
        t, row = self.rows(x.permute(0, 2, 3, 1), self, want)  # (B, H, W, C): the rows are the lines
        t, column = self.columns(t.transpose(1, 2), self, want)  # (B, W, H, C): the columns are the lines
        out = t.permute(0, 3, 2, 1)  # (B, C, H, W)
        weights = (row, column.permute(0, 1, 3, 2, 4)) if want else None  # column: (B, h, H, W, H)
        grid = tuple(x.shape[2:])
        return self.finish(out, weights, need_weights, queries=grid, keys=grid)

    def looks(self, record: Record, query: tuple[int, ...] = ()) -> Tensor:
        """(B, H, W): the weights of pixel ``query`` = (i, j) along row i plus those along column j
        (heads averaged; the pixel itself holds the sum of its two weights)."""
        (i, j), (row, column) = query, record.weights
        image = torch.zeros(row.shape[0], *row.shape[2:4], dtype=row.dtype, device=row.device)
        image[:, i, :] = row[:, :, i, j].mean(1)
        image[:, :, j] += column[:, :, i, j].mean(1)
        return image
