"""Criss-cross attention (CCNet): every pixel attends to its own row and column.

For pixel u = (i, j) the keys are the W pixels of row i and the H pixels of column j,
u counted once: H + W - 1 keys and ONE joint softmax over them, without a 1/sqrt(d) scale::

    e_u,v = q_u . k_v                       v in row(i) U column(j)
    A_u   = softmax_v(e_u,v)
    y_u   = gamma * sum_v A_u,v v_v + x_u   (gamma learnable, starts at 0)

applied ``recurrence`` times with shared weights; two passes connect every pair of pixels.

Cost per pass: O(HW (H + W) C) time and O(HW (H + W)) memory for the weights, against
O((HW)^2 C) and O((HW)^2) for non-local attention. No (HW x HW) tensor and no mask tensor
exist: the column energies hold each pixel's own entry, which is set to -inf in place.

The kernel works in channels-last layout. The row family is then a plain batched matmul
over (B*H) rows of (W, C) matrices, and the column family a matmul over strided (H, C)
views that accumulates straight into the row result, so the value and output tensors are
never permuted or copied. Softmax statistics are kept in float32 for half-precision inputs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionBlock
from ..general import AttentionOutput
from ..registry import register


def _columns(t: Tensor) -> list[Tensor]:
    """(B, H, W, c) -> per image a (W, H, c) view: one (H, c) matrix per column, no copy."""
    return list(t.transpose(1, 2).unbind(0))


def _statistics_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _column_products(a: Tensor, b: Tensor) -> Tensor:
    """out[n, j] = a_j @ b_j^T over the columns j of each image: (B, H, W, c) x2 -> (B, W, H, H)."""
    batch, height, width, _ = a.shape
    out = a.new_empty(batch, width, height, height)
    for o, a_col, b_col in zip(out, _columns(a), _columns(b)):
        torch.bmm(a_col, b_col.transpose(1, 2), out=o)
    return out


class _CrissCross(torch.autograd.Function):
    """y_u = sum_v A_u,v v_v over row and column of u; q, k (B, H, W, c), v (B, H, W, C)."""

    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor) -> Tensor:  # type: ignore[override]
        with torch.autocast(q.device.type, enabled=False):
            p_row, p_col = _weights(q, k)
            out = p_row @ v  # (B, H, W, C): row contributions
            for o, p, val in zip(_columns(out), p_col, _columns(v)):
                torch.baddbmm(o, p, val, out=o)  # + column contributions, in place
        ctx.save_for_backward(q, k, v, p_row, p_col)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        q, k, v, p_row, p_col = ctx.saved_tensors
        grad = grad.to(v.dtype).contiguous()
        acc = _statistics_dtype(q.dtype)
        dp_row = (grad @ v.transpose(-1, -2)).to(acc)  # (B, H, W, W)
        dp_col = _column_products(grad, v).to(acc)  # (B, W, H, H)
        dv = p_row.transpose(-1, -2) @ grad
        for d, p, g in zip(_columns(dv), p_col, _columns(grad)):
            torch.baddbmm(d, p.transpose(1, 2), g, out=d)
        # Joint softmax backward: de = p * (dp - sum over the row AND column keys of p * dp).
        total = (p_row * dp_row).sum(-1) + (p_col * dp_col).sum(-1).transpose(1, 2)
        de_row = (dp_row - total.unsqueeze(-1)).mul_(p_row).to(q.dtype)
        de_col = (dp_col - total.transpose(1, 2).unsqueeze(-1)).mul_(p_col).to(q.dtype)
        dq, dk = de_row @ k, de_row.transpose(-1, -2) @ q
        for dq_c, dk_c, de, q_c, k_c in zip(_columns(dq), _columns(dk), de_col, _columns(q), _columns(k)):
            torch.baddbmm(dq_c, de, k_c, out=dq_c)
            torch.baddbmm(dk_c, de.transpose(1, 2), q_c, out=dk_c)
        return dq, dk, dv


def _weights(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    """Joint softmax over each pixel's row and column keys.

    Returns p_row (B, H, W, W) with p_row[b, i, j, j'] the weight of pixel (i, j') for query
    (i, j), and p_col (B, W, H, H) with p_col[b, j, i, i'] the weight of pixel (i', j); the
    query's own pixel appears in the row part only (its column entry is 0).
    """
    acc = _statistics_dtype(q.dtype)
    e_row = (q @ k.transpose(-1, -2)).to(acc)
    e_col = _column_products(q, k).to(acc)
    e_col.diagonal(dim1=-2, dim2=-1).fill_(float("-inf"))  # the own pixel is counted in its row
    peak = torch.maximum(e_row.amax(-1), e_col.amax(-1).transpose(1, 2))  # (B, H, W)
    e_row.sub_(peak.unsqueeze(-1)).exp_()
    e_col.sub_(peak.transpose(1, 2).unsqueeze(-1)).exp_()
    total = e_row.sum(-1) + e_col.sum(-1).transpose(1, 2)
    e_row.div_(total.unsqueeze(-1))
    e_col.div_(total.transpose(1, 2).unsqueeze(-1))
    return e_row.to(q.dtype), e_col.to(q.dtype)


@register(
    "criss_cross",
    kind="feature_map",
    category="vision / criss-cross (row and column self-attention)",
    paper="Huang et al., CCNet: Criss-Cross Attention for Semantic Segmentation, ICCV 2019",
)
class CrissCrossAttention(AttentionBlock):
    """Criss-cross attention with recurrence: each pixel attends to its row and column.

    Args:
        channels: C, the input and output channels.
        reduction: query/key channels are C // reduction (CCNet: 8).
        recurrence: R, how many times the block is applied with shared weights (CCNet: 2).

    Shapes:
        x (B, C, H, W) -> (B, C, H, W), in channels-last memory format. With
        ``need_weights=True``: ``AttentionOutput(output, weights)``, the last pass's weights.

    Captured weights:
        per pass a (B, H, W, H + W) tensor: for query pixel (i, j), first the H weights of
        column j (the query's own entry 0), then the W weights of row i, as in CCNet;
        :meth:`pixel_map` draws one pixel's weights as an (B, H, W) map. The records carry
        no gradient.
    """

    def __init__(self, channels: int, reduction: int = 8, recurrence: int = 2) -> None:
        super().__init__()
        if recurrence < 1:
            raise ValueError(f"criss_cross: recurrence must be >= 1, got {recurrence}")
        self.channels, self.recurrence = channels, recurrence
        self.inner = max(channels // reduction, 1)
        self.query_conv = nn.Conv2d(channels, self.inner, 1)
        self.key_conv = nn.Conv2d(channels, self.inner, 1)
        self.value_conv = nn.Conv2d(channels, channels, 1)
        self.gamma = nn.Parameter(torch.zeros(1))

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        x = x.contiguous(memory_format=torch.channels_last)
        weight = torch.cat([self.query_conv.weight, self.key_conv.weight, self.value_conv.weight])
        bias = torch.cat([self.query_conv.bias, self.key_conv.bias, self.value_conv.bias])
        want = self.wants_weights(need_weights)
        for _ in range(self.recurrence):
            qkv = F.conv2d(x, weight, bias).permute(0, 2, 3, 1)  # (B, H, W, 2C' + C), a view
            q, k, v = qkv.split([self.inner, self.inner, self.channels], dim=-1)
            if want:
                with torch.no_grad():
                    p_row, p_col = _weights(q, k)
                weights = torch.cat([p_col.transpose(1, 2), p_row], dim=-1)
                self.record(weights)
            out = _CrissCross.apply(q, k, v).permute(0, 3, 1, 2)  # (B, C, H, W), channels last
            x = torch.addcmul(x, self.gamma, out)
        return AttentionOutput(x, weights) if need_weights else x

    def weights_image(self, record: object) -> Tensor:
        """The cross of weights with which the centre pixel of the first image attends."""
        return self.pixel_map(record, record.shape[1] // 2, record.shape[2] // 2)[0]

    @staticmethod
    def pixel_map(weights: Tensor, i: int, j: int) -> Tensor:
        """(B, H, W) map of the weights with which pixel (i, j) attends, from a captured record."""
        height = weights.shape[1]
        column, row = weights[:, i, j, :height], weights[:, i, j, height:]
        image = torch.zeros(weights.shape[:3], dtype=weights.dtype, device=weights.device)
        image[:, :, j] = column
        image[:, i, :] += row
        return image
