"""Stand-alone self-attention (Ramachandran et al., NeurIPS 2019): every pixel attends to the
k x k window around it, with relative position embeddings for the row and column offsets.

The windows of the keys and values are unfolded (``F.unfold``, im2col), one tensor op for all
pixels; positions outside the map are left out of the softmax, not attended as zero padding. No
fused kernel computes this pattern here, so the weights are always formed: they cost
(B, h, k^2, H, W), and the unfolded keys and values k^2 times the map.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..record import Record
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


def unfolded(t: Tensor, kernel_size: int) -> Tensor:
    """(B, h, d, H, W) -> (B, h, d, k^2, H, W): the k x k window around each position, offsets in
    row-major order, zero outside the map (``F.unfold``, im2col)."""
    batch, heads, width, height, breadth = t.shape
    unfolded = F.unfold(t.flatten(1, 2), kernel_size, padding=kernel_size // 2)  # (B, h d k^2, H W)
    return unfolded.view(batch, heads, width, kernel_size**2, height, breadth)


def window_inside(height: int, width: int, kernel_size: int, device: torch.device) -> Tensor:
    """(k^2, H, W) boolean: whether offset (a, b) (row-major) of pixel (i, j)'s window lies inside the map."""
    offsets = torch.arange(kernel_size, device=device) - kernel_size // 2
    rows = offsets[:, None] + torch.arange(height, device=device)  # (k, H): the rows of each window
    columns = offsets[:, None] + torch.arange(width, device=device)  # (k, W)
    rows_in, columns_in = (rows >= 0) & (rows < height), (columns >= 0) & (columns < width)
    return (rows_in[:, None, :, None] & columns_in[None, :, None, :]).flatten(0, 1)


#: The heads a block takes by default, most first: the paper's 8, else as many as leave an even head width.
HEADS = (8, 4, 2, 1)


@register(
    "stand_alone",
    kind="feature_map",
    placement="block",
    category="vision / local 2-D self-attention (k x k window, relative positions)",
    paper="Ramachandran, Parmar, Vaswani, Bello, Levskaya & Shlens, Stand-Alone Self-Attention in Vision "
    "Models, NeurIPS 2019",
)
class StandAloneSelfAttention(AttentionBlock):
    """Stand-alone (local 2-D) self-attention: every pixel attends to its k x k neighbourhood.

    Per head (h heads of d = C / h features; W_Q, W_K, W_V 1 x 1 convolutions without biases),
    for pixel (i, j) and the pixels (a, b) of its window N_k(i, j) inside the map::

        e_ij,ab = q_ij . k_ab + q_ij . r_{a-i, b-j}        no 1/sqrt(d) scaling, as in the paper
        r_{a-i, b-j} = [r^row_{a-i} ; r^col_{b-j}]          d/2 + d/2 learned features per head
        y_ij = sum_{ab in N_k(i, j)} softmax_ab(e_ij,ab) v_ab
        out_ij = x_ij + gamma [y_ij]_heads                  gamma a learned scalar, 0 at init

    In the paper the layer replaces the spatial convolutions of a ResNet; here it is a residual
    block gated by gamma, so the network starts as the one without it (placement ``block``: on
    the residual branch of every residual block).

    Args:
        channels: C, the input and output channels.
        kernel_size: k, odd (the paper: 7).
        num_heads: h (C must be divisible by it with d = C / h even; the paper: 8). Default: the
            most of :data:`HEADS` that fit, so a narrow stage (C = 8: 4 heads of 2) takes the block too.

    Shapes:
        x (B, C, H, W) -> (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, h, H, W, k, k))``.

    Captured weights: the (B, h, H, W, k, k) softmax of each call: pixel (i, j)'s weights over
    its window, offset (a - i + k // 2, b - j + k // 2); 0 where the window leaves the map.

    Paper: Ramachandran, Parmar, Vaswani, Bello, Levskaya & Shlens, "Stand-Alone Self-Attention
    in Vision Models", NeurIPS 2019.
    """

    def __init__(
        self, channels: PositiveInt, kernel_size: PositiveInt = 7, num_heads: Optional[PositiveInt] = None
    ) -> None:
        super().__init__()
        if num_heads is None:
            num_heads = next((h for h in HEADS if channels % h == 0 and (channels // h) % 2 == 0), HEADS[0])
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"stand_alone: kernel_size must be odd, got {kernel_size}")
        if num_heads < 1 or channels % num_heads or (channels // num_heads) % 2:
            raise ValueError(
                f"stand_alone: channels={channels} must be num_heads={num_heads} times an even "
                "head width (half of it embeds row offsets, half column offsets)"
            )
        self.channels, self.kernel_size, self.num_heads = channels, kernel_size, num_heads
        half = channels // num_heads // 2
        self.qkv = nn.Conv2d(channels, 3 * channels, 1, bias=False)
        self.rel_rows = nn.Parameter(torch.randn(num_heads, kernel_size, half) * (2 * half) ** -0.5)
        self.rel_columns = nn.Parameter(torch.randn(num_heads, kernel_size, half) * (2 * half) ** -0.5)
        self.gamma = nn.Parameter(torch.zeros(1))

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        grid, k = tuple(x.shape[2:]), self.kernel_size
        q, key, value = self.qkv(x).unflatten(1, (3, self.num_heads, -1)).unbind(1)  # (B, h, d, H, W) each
        q_rows, q_columns = q.chunk(2, dim=2)
        rows = torch.einsum("bndij,npd->bnpij", q_rows, self.rel_rows)  # (B, h, k, H, W): q . r^row per row offset
        columns = torch.einsum("bndij,nqd->bnqij", q_columns, self.rel_columns)
        energies = (q.unsqueeze(3) * unfolded(key, k)).sum(2) + (rows.unsqueeze(3) + columns.unsqueeze(2)).flatten(2, 3)
        inside = window_inside(*grid, k, x.device)  # (k^2, H, W)
        weights = torch.softmax(energies.masked_fill(~inside, float("-inf")), dim=2)  # (B, h, k^2, H, W)
        weights = self.ablate(weights, inside, dim=2)
        y = (weights.unsqueeze(2) * unfolded(value, k)).sum(3).flatten(1, 2)  # (B, C, H, W)
        want = self.wants_weights(need_weights)
        record = weights.unflatten(2, (k, k)).permute(0, 1, 4, 5, 2, 3) if want else None  # (B, h, H, W, k, k)
        return self.finish(x + self.gamma * y, record, need_weights, queries=grid, keys=grid)

    def looks(self, record: Record, query: tuple[int, ...] = ()) -> Tensor:
        """(B, H, W): pixel ``query`` = (i, j)'s weights over its window (heads averaged), 0 elsewhere."""
        (i, j), (height, width), radius = query, record.queries, self.kernel_size // 2
        window = record.weights[:, :, i, j].mean(1)  # (B, k, k)
        image = window.new_zeros(window.shape[0], height, width)
        top, left = max(i - radius, 0), max(j - radius, 0)
        bottom, right = min(i + radius + 1, height), min(j + radius + 1, width)
        image[:, top:bottom, left:right] = window[
            :, top - i + radius : bottom - i + radius, left - j + radius : right - j + radius
        ]
        return image
