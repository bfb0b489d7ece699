"""Criss-cross attention (CCNet): every pixel attends to its own row and column.

For pixel u = (i, j) the keys are the W pixels of row i and the H pixels of column j,
u counted once: H + W - 1 keys and ONE joint softmax over them, without a 1/sqrt(d) scale::

    e_u,v = q_u . k_v                       v in row(i) U column(j)
    A_u   = softmax_v(e_u,v)
    y_u   = gamma * sum_v A_u,v v_v + x_u   (gamma learnable, starts at 0)

applied ``recurrence`` times with shared weights; two passes connect every pair of pixels.

Cost per pass: O(HW (H + W) C) time and at most O(HW (H + W)) memory for the weights, against
O((HW)^2 C) and O((HW)^2) for non-local attention. The block works in channels-last layout:
q, k and v are views of one 1 x 1 convolution's output, and the core is the custom operator
``framework::criss_cross`` (``criss_cross_op``): Triton kernels on CUDA that never hold the
weights, batched matmuls elsewhere, one graph node for ``torch.compile``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..probes import ProbeRows
from ..record import Record
from ..registry import register
from .criss_cross_op import criss_cross, statistics_dtype, uses_triton

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


def criss_cross_weights(q: Tensor, k: Tensor) -> Tensor:
    """The captured record (B, H, W, H + W): for pixel (i, j) the weights of column j
    (its own entry 0), then those of row i; q, k (B, H, W, c). Differentiable: the ``eager``
    backend's weights, with einsum, in the operator's statistics dtype."""
    dtype, acc = q.dtype, statistics_dtype(q.dtype)
    q, k = q.to(acc), k.to(acc)
    own = torch.eye(q.shape[1], dtype=torch.bool, device=q.device)[:, None, :]  # (H, 1, H): i' = i
    e_col = torch.einsum("bijc,bkjc->bijk", q, k).masked_fill(own, float("-inf"))  # k over the rows of column j
    e_row = torch.einsum("bijc,bikc->bijk", q, k)  # k over the columns of row i
    return torch.cat([e_col, e_row], dim=-1).softmax(-1).to(dtype)


def own_pixel_excluded(height: int, width: int, device: torch.device) -> Tensor:
    """(H, W, H + W) boolean: the keys of each pixel in a record's layout, False at its own
    entry of the column part (the pixel is counted in its row)."""
    valid = torch.ones(height, width, height + width, dtype=torch.bool, device=device)
    rows = torch.arange(height, device=device)
    valid[rows, :, rows] = False
    return valid


def apply_weights(weights: Tensor, v: Tensor) -> Tensor:
    """sum_v A_u,v v_v for weights in a record's layout (B, H, W, H + W) and v (B, H, W, C): the
    explicit form the block uses when its weights are replaced (ablation)."""
    height = weights.shape[1]
    column = torch.einsum("bijk,bkjc->bijc", weights[..., :height], v)  # k runs over the rows of column j
    return column + torch.einsum("bijk,bikc->bijc", weights[..., height:], v)  # k over the columns of row i


def cross_keys(index: Tensor, height: int, width: int) -> tuple[Tensor, Tensor]:
    """The keys of the pixels at flat ``index`` (P,): their flat positions (P, W + H), the W
    pixels of the row then the H of the column, and (P, W + H) bool, False at the pixel's own
    entry of the column (it is counted in its row)."""
    i, j = index // width, index % width
    columns, rows = torch.arange(width, device=index.device), torch.arange(height, device=index.device)
    positions = torch.cat([i[:, None] * width + columns, rows * width + j[:, None]], dim=1)
    counted = torch.cat([torch.ones_like(positions[:, :width], dtype=torch.bool), rows != i[:, None]], dim=1)
    return positions, counted


def probe_rows(q: Tensor, k: Tensor, lse: Tensor, index: Tensor) -> ProbeRows:
    """The rows of the pixels at flat ``index`` (P,) over all H W pixels, (B, P, H W), from q, k
    (B, H, W, c) and the kernel's log-sum-exp (B, H, W): A_u,v = exp(q_u . k_v - lse_u) on the
    cross of u, 0 elsewhere; with the energies and the cross as ``valid``. O(P (H + W) c)."""
    batch, height, width, _ = q.shape
    positions, counted = cross_keys(index, height, width)
    flat_q, flat_k = q.flatten(1, 2), k.flatten(1, 2)  # (B, H W, c)
    keys = flat_k[:, positions]  # (B, P, W + H, c)
    energies = torch.einsum("bpc,bpkc->bpk", flat_q[:, index].to(lse.dtype), keys.to(lse.dtype))
    weights = (energies - lse.flatten(1)[:, index, None]).exp() * counted
    at = positions.expand(batch, -1, -1)
    dense = energies.new_zeros(batch, len(index), height * width)
    logits = dense.clone().scatter_(-1, at[..., width:], energies[..., width:])  # columns first: the row wins at u
    logits.scatter_(-1, at[..., :width], energies[..., :width])
    valid = torch.zeros(1, len(index), height * width, dtype=torch.bool, device=q.device)
    valid.scatter_(-1, positions[None], counted[None])
    valid.scatter_(-1, positions[None, :, :width], True)
    return ProbeRows(dense.scatter_add_(-1, at, weights).to(q.dtype), valid, logits)


@register(
    "criss_cross",
    kind="feature_map",
    placement="stage",
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
        no gradient. A capture with probes gets per pass the probe pixels' rows over all
        pixels, (B, P, H W), 0 off their cross, computed from q, k and the log-sum-exp that
        the kernel returns (kept as the record's ``lse``), at O(P (H + W)) beyond the rows.
    """

    gives_probe_rows = True

    @property
    def backends(self) -> tuple[str, ...]:  # type: ignore[override]
        """The operator's path, ``triton`` (CUDA) or ``portable`` (matmuls, elsewhere), then ``eager``
        (explicit weights, einsum) and the other operator path, which the device refuses."""
        weight = self.gamma
        return ("triton", "eager", "portable") if uses_triton(weight) else ("portable", "eager", "triton")

    def backend_missing(self, name: str, device: torch.device, training: bool = False) -> Optional[str]:
        probe = torch.empty(0, device=device)
        if name == "triton" and not uses_triton(probe):
            return f"the Triton kernels run on CUDA (and under TRITON_INTERPRET=1), not on {device.type}"
        if name == "portable" and uses_triton(probe):
            return f"the operator runs its Triton kernels on {device.type}; choose triton or eager"
        return None

    def __init__(self, channels: PositiveInt, reduction: PositiveInt = 8, recurrence: PositiveInt = 2) -> None:
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
        grid = tuple(x.shape[2:])
        for _ in range(self.recurrence):
            qkv = F.conv2d(x, weight, bias).permute(0, 2, 3, 1)  # (B, H, W, 2C' + C), a view
            q, k, v = qkv.split([self.inner, self.inner, self.channels], dim=-1)
            eager = self.chosen_backend == "eager"
            if want:
                with torch.set_grad_enabled(eager and torch.is_grad_enabled()):
                    weights = criss_cross_weights(q, k)
            if self.ablation is None and not eager:
                if self.chosen_backend and (missing := self.backend_missing(self.chosen_backend, q.device)):
                    raise ValueError(f"{self.block_name}: backend {self.chosen_backend!r}: {missing}")
                out, lse = criss_cross(q, k, v)
            else:
                weights = self.ablate(weights, own_pixel_excluded(*grid, x.device))
                out = apply_weights(weights, v)
            if want:
                self.record(weights, queries=grid, keys=grid)
            if self.probing():
                self._probe(q, k, *((lse, None) if self.ablation is None else (None, weights)))
            x = torch.addcmul(x, self.gamma, out.permute(0, 3, 1, 2))  # (B, C, H, W), channels last
        return self.finish(x, weights if need_weights else None, need_weights, recorded=True)  # one record per pass

    def _probe(self, q: Tensor, k: Tensor, lse: Optional[Tensor], weights: Optional[Tensor]) -> None:
        """The rows of a capture's probe pixels: from the kernel's log-sum-exp, or, when the
        block is ablated, from the weights it used."""
        grid = tuple(q.shape[1:3])

        def rows(index: Tensor) -> ProbeRows:
            if weights is None:
                return probe_rows(q, k, lse, index)
            positions, counted = cross_keys(index, *grid)
            valid = torch.zeros(1, len(index), grid[0] * grid[1], dtype=torch.bool, device=q.device)
            valid.scatter_(-1, positions[None], counted[None]).scatter_(-1, positions[None, :, : grid[1]], True)
            maps = [self.pixel_map(weights, int(u) // grid[1], int(u) % grid[1]) for u in index]
            return ProbeRows(torch.stack(maps, 1).flatten(2), valid)

        self.record_rows(rows, queries=grid, keys=grid, device=q.device, lse=lse)

    def grid_weights(self, record: Record) -> Tensor:
        """(B, H W, H W): every pixel's weights over all pixels, 0 off its cross."""
        height, width = record.weights.shape[1:3]
        return torch.stack(
            [self.pixel_map(record.weights, i, j) for i in range(height) for j in range(width)], 1
        ).flatten(2)

    def looks(self, record: Record, query: tuple[int, ...] = ()) -> Tensor:
        """(B, H, W): the cross of weights with which pixel ``query`` = (i, j) attends."""
        if record.probes is not None:
            return super().looks(record, query)
        return self.pixel_map(record.weights, *query)

    @staticmethod
    def pixel_map(weights: Tensor, i: int, j: int) -> Tensor:
        """(B, H, W) map of the weights with which pixel (i, j) attends, from a captured record."""
        height = weights.shape[1]
        column, row = weights[:, i, j, :height], weights[:, i, j, height:]
        image = torch.zeros(weights.shape[:3], dtype=weights.dtype, device=weights.device)
        image[:, :, j] = column
        image[:, i, :] += row
        return image
