"""Non-local block: every position attends to every position of the feature map (embedded Gaussian)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..probes import ProbeRows
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


def tokens(x: Tensor) -> Tensor:
    """(B, C, H, W) -> (B, HW, C), positions in row-major order."""
    return x.flatten(2).transpose(1, 2)


def dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    block: AttentionBlock,
    want: bool,
    scale: float = 1.0,
    grids: Optional[tuple[tuple[int, ...], tuple[int, ...]]] = None,
    recorder: Optional[AttentionBlock] = None,
) -> tuple[Tensor, Optional[Tensor]]:
    """softmax(scale q k^T) v, unscaled by default, for q (..., M, d), k (..., N, d), v (..., N, dv)
    (any leading batch and head axes): (output, weights or None).

    Without ``want`` the fused ``scaled_dot_product_attention`` computes it and the (..., M, N)
    weights are never materialised (3-D inputs get a head axis and every input contiguous
    features: without them the kernels fall back to their N x N math, 9 GB and 7x the time at
    128 x 256 positions on the CPU); with it the same numbers come from an explicit softmax,
    passed through ``block``'s ablation, and the weights are returned. ``grids``: the query and
    key grids of the M queries and N keys, for the rows of a capture's probe queries, which
    ``recorder`` (default ``block``) records when it is
    :meth:`~framework.attention.AttentionBlock.probing` (cut from the weights where they were
    computed, else softmax(scale q_P k^T) at O(P N) memory).
    """
    recorder = recorder or block
    weights = None
    if want:
        weights = block.ablate(torch.softmax((q @ k.transpose(-2, -1)) * scale, dim=-1))
        y = weights @ v
    else:  # the fused kernels take (B, h, N, d) with contiguous features; else they fall back to the N x N math
        fused = [(t if t.dim() == 4 else t[:, None]).contiguous() for t in (q, k, v)]
        y = F.scaled_dot_product_attention(*fused, scale=scale)
        y = y if q.dim() == 4 else y[:, 0]
    if grids is not None and recorder.probing():

        def rows(index: Tensor) -> ProbeRows:
            logits = (q.index_select(-2, index) @ k.transpose(-2, -1)) * scale
            return ProbeRows(logits.softmax(-1) if weights is None else weights.index_select(-2, index), None, logits)

        recorder.record_rows(rows, queries=grids[0], keys=grids[1], device=q.device)
    return y, weights


@register(
    "non_local",
    kind="feature_map",
    placement="stage",
    category="vision / non-local (self-attention over positions)",
    paper="Wang, Girshick, Gupta & He, CVPR 2018",
    aliases=("nl",),
)
class NonLocal(AttentionBlock):
    """Non-local block (embedded Gaussian): self-attention over all positions, added to the input.

    With theta, phi, g and W_z 1 x 1 convolutions (biases included), for positions i, j::

        a_ij = softmax_j(theta(x)_i . phi(x)_j)        no 1/sqrt(d) scaling
        y_i  = sum_j a_ij g(x)_j                       (B, C', H, W)
        out  = BN(W_z y) + x

    The BatchNorm's weight starts at 0, so the block starts as the identity. With
    ``sub_sample`` phi(x) and g(x) are max-pooled by 2 (N' = floor(H/2) floor(W/2) keys).
    timm's ``nl`` (its alias here) is this block with energies scaled by 1/sqrt(C) and
    C' = C / 8 by default; ``rd_channels`` sets C' here too.

    Args:
        channels: input channels C.
        inner_channels: C' of theta, phi and g (default C // 2).
        sub_sample: max-pool the keys and values by 2 in each direction.

    Shapes:
        x (B, C, H, W). Output (B, C, H, W). With ``need_weights=True``:
        ``AttentionOutput(output, weights (B, HW, N'))``, N' = HW without ``sub_sample``.

    Captured weights: the (B, HW, N') softmax a, one record per call; a capture with probes gets
    the probe pixels' rows from theta and phi, at O(P N') memory, on any path.

    Paper: Wang, Girshick, Gupta & He, "Non-local Neural Networks", CVPR 2018.
    """

    gives_probe_rows = True
    backends = ("sdpa", "eager")  # fused scaled_dot_product_attention; explicit softmax (framework.attention.backends)

    def __init__(
        self, channels: PositiveInt, inner_channels: Optional[PositiveInt] = None, sub_sample: bool = False
    ) -> None:
        super().__init__()
        self.channels = channels
        inner = inner_channels or max(channels // 2, 1)
        self.theta = nn.Conv2d(channels, inner, 1)
        self.phi = nn.Conv2d(channels, inner, 1)
        self.g = nn.Conv2d(channels, inner, 1)
        self.sub_sample = sub_sample
        self.pool = nn.MaxPool2d(2) if sub_sample else nn.Identity()
        self.out = nn.Conv2d(inner, channels, 1)
        self.norm = nn.BatchNorm2d(channels)
        nn.init.zeros_(self.norm.weight)

    def forward(self, x: Tensor, *, need_weights: bool = False) -> Tensor | AttentionOutput:
        self.expect("x", x, "B C H W", C=self.channels)
        want = self.wants_weights(need_weights)
        q, k, v = tokens(self.theta(x)), tokens(self.pool(self.phi(x))), tokens(self.pool(self.g(x)))
        (h, w), sub = x.shape[2:], self.sub_sample
        keys = (h // 2, w // 2) if sub else (h, w)
        y, weights = dot_product_attention(q, k, v, self, want, grids=((h, w), keys))
        y = y.transpose(1, 2).unflatten(2, x.shape[2:])  # (B, C', H, W)
        return self.finish(self.norm(self.out(y)) + x, weights, need_weights, queries=(h, w), keys=keys)
