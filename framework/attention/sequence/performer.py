"""Performer (Choromanski et al., ICLR 2021): softmax attention approximated by positive
orthogonal random features (FAVOR+), in time and memory linear in the length."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..masks import sequence_mask
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import NonNegativeInt, PositiveInt


def _ratio(numerator: Tensor, denominator: Tensor) -> Tensor:
    """numerator / denominator, 0 where the denominator is 0 (a query with no key), with finite
    gradients there too."""
    return numerator / torch.where(denominator > 0, denominator, 1.0)


def orthogonal_features(
    num_features: int, dim: int, *, device: Optional[torch.device] = None, dtype: torch.dtype = torch.float32
) -> Tensor:
    """(m, d) Gaussian orthogonal random features: blocks of d orthonormal rows (QR of a
    Gaussian matrix, signs fixed by R's diagonal so that Q is Haar-distributed), each row
    rescaled to the norm of a d-dimensional Gaussian vector, so that every row is marginally
    N(0, I_d) while the rows of a block stay orthogonal."""
    gaussian = torch.randn(math.ceil(num_features / dim), dim, dim, device=device, dtype=torch.float32)
    q, r = torch.linalg.qr(gaussian)
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)  # without the signs Q's columns lean one way
    rows = q.transpose(-1, -2).flatten(0, 1)[:num_features]
    norms = torch.randn(num_features, dim, device=device, dtype=torch.float32).norm(dim=1, keepdim=True)
    return (rows * norms).to(dtype)


def causal_linear_attention(fq: Tensor, fk: Tensor, v: Tensor, chunk: int) -> Tensor:
    """out_i = sum_{j <= i} (fq_i . fk_j) v_j / sum_{j <= i} fq_i . fk_j for fq, fk (B, h, N, m) and
    v (B, h, N, d), in chunks of C = ``chunk`` positions: within a chunk the masked (C, C) products,
    across chunks running sums of fk^T v kept once per chunk::

        num_i = (fq_c fk_c^T * tril) v_c [i] + fq_i S_{c-1},   S_c = sum_{c' <= c} fk_c'^T v_c'  (m, d)

    Time O(N C (m + d) + N m d), memory O(N C + (N / C) m d), where prefix sums per position
    would keep (B, h, N, m, d) (7x slower than multi-head attention at N = 50 on SASRec)."""
    b, h, n, m = fq.shape
    size = min(chunk, n)
    pad = -n % size
    if pad:  # zero features add nothing to the sums; the padded queries' rows are dropped
        fq, fk, v = (F.pad(t, (0, 0, 0, pad)) for t in (fq, fk, v))
    fq, fk, v = (t.unflatten(2, (-1, size)) for t in (fq, fk, v))  # (B, h, N / C, C, .)
    inner = (fq @ fk.transpose(-1, -2)).tril()  # (B, h, N / C, C, C)
    sums = fk.transpose(-1, -2) @ v  # (B, h, N / C, m, d): each chunk's fk^T v
    before = sums.cumsum(2) - sums  # the chunks before each
    keys_before = fk.sum(3).cumsum(2) - fk.sum(3)  # (B, h, N / C, m)
    numerator = inner @ v + fq @ before
    denominator = inner.sum(-1, keepdim=True) + fq @ keys_before.unsqueeze(-1)
    return _ratio(numerator, denominator).flatten(2, 3)[:, :, :n]


@register(
    "performer",
    kind="sequence",
    category="efficient / kernel (positive random features, FAVOR+)",
    paper="Choromanski et al., Rethinking Attention with Performers, ICLR 2021",
)
class Performer(Attention):
    """FAVOR+ self-attention: softmax attention estimated with positive random features.

    ::

        phi(x) = exp(W x' - |x'|^2 / 2) / sqrt(m),   x' = x / d_h^(1/4),  W (m, d_h) random
        E[phi(q)^T phi(k)] = exp(q^T k / sqrt(d_h))
        out_i  = phi(q_i)^T sum_j phi(k_j) v_j^T / phi(q_i)^T sum_j phi(k_j)     (per head)

    so attention costs O(N m d_h) instead of O(N^2 d_h). ``causal`` sums over j <= i only
    (prefix sums). The rows of W are orthogonal Gaussian features (:func:`orthogonal_features`),
    shared by the heads; they are redrawn every ``redraw_interval`` training calls
    (0: never), or by :meth:`redraw`. A constant per query (the largest of W q') and per
    head (the largest over keys) is taken out of the exponents for range; it cancels in the
    ratio.

    Args:
        dim: token features D.
        num_heads: h heads.
        features: m random features.
        redraw_interval: training calls between redraws of W (0 = never).
        causal: token i attends tokens j <= i only.
        bias: biases of the four projections.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real token. Output (B, N, D); with
        ``need_weights=True`` an ``AttentionOutput(output, weights (B, h, N, N))``, the
        implied weights phi(q_i)^T phi(k_j) / sum_l phi(q_i)^T phi(k_l), computed densely.
        ``attn_mask`` is refused (a mask between tokens has no linear-time form).

    Captured weights: the (B, h, N, N) implied weights of each call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        num_heads: PositiveInt = 8,
        features: PositiveInt = 64,
        redraw_interval: NonNegativeInt = 1000,
        causal: bool = False,
        bias: bool = True,
    ) -> None:
        super().__init__(dim, score="scaled_dot", num_heads=num_heads, causal=causal, bias=bias)
        self.gives_probe_rows = False  # its own forward: a capture's probe rows are cut from the weights
        if features < 1 or redraw_interval < 0:
            raise ValueError(
                f"performer: features must be >= 1 and redraw_interval >= 0, got {features}, {redraw_interval}"
            )
        self.features, self.redraw_interval = features, redraw_interval
        self.head_dim = dim // num_heads
        self.register_buffer("projection", orthogonal_features(features, self.head_dim))
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def redraw(self) -> None:
        """Draw new random features W."""
        self.projection.copy_(
            orthogonal_features(
                self.features, self.head_dim, device=self.projection.device, dtype=self.projection.dtype
            )
        )

    def feature_map(self, x: Tensor, valid: Optional[Tensor] = None, *, query: bool) -> Tensor:
        """phi(x) (B, h, N, m) for x (B, h, N, d_h), up to a constant per query row (``query``)
        or per head (keys; ``valid`` (B, 1, N, 1) keeps padded keys out of it, and zeroes them)."""
        x = x * self.head_dim**-0.25
        projection = self.projection.to(x.dtype, copy=True)  # a redraw may overwrite the buffer before backward
        logits = x @ projection.T - x.square().sum(-1, keepdim=True) / 2
        if query:
            top = logits.amax(-1, keepdim=True)
        else:
            scored = logits if valid is None else logits.masked_fill(~valid, float("-inf"))
            top = scored.amax((-1, -2), keepdim=True)
            top = torch.where(torch.isfinite(top), top, 0.0)  # a head with no key left
        features = torch.exp(logits - top.detach()) / math.sqrt(self.features)
        return features if valid is None else features * valid

    backends = ("linear", "eager")  # running sums of the features; explicit weights (framework.attention.backends)

    def forward(
        self,
        x: Tensor,
        mask: Optional[Tensor] = None,
        *,
        attn_mask: Optional[Tensor] = None,  # type: ignore[override]
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        sequence_mask(self, x, mask)  # the checks: the linear path needs no (N, N) mask
        n = x.shape[1]
        if attn_mask is not None:
            raise ValueError(
                f"{self.block_name}: attn_mask is not supported (a mask between tokens has no linear-time form)"
            )
        if self.training and self.redraw_interval:
            self._count_and_redraw()
        q, k, v = (self._split(proj(x)) for proj in (self.q_proj, self.k_proj, self.v_proj))
        valid = None if mask is None else mask[:, None, :, None]
        fq, fk = self.feature_map(q, query=True), self.feature_map(k, valid, query=False)
        weights = None
        if self.wants_weights(need_weights):
            allowed = sequence_mask(self, x, mask, causal=self.causal)
            energies = fq @ fk.transpose(-1, -2)
            if allowed is not None:
                energies = energies * allowed
            weights = _ratio(energies, energies.sum(-1, keepdim=True))
            weights = self.ablate(weights, allowed, normalised=True)
            context = weights @ v
        elif self.causal:
            context = causal_linear_attention(fq, fk, v, self.chunk)
        else:
            numerator = fq @ (v.transpose(-1, -2) @ fk).transpose(-1, -2)  # phi(Q) (phi(K)^T V)
            denominator = fq @ fk.sum(2).unsqueeze(-1)
            context = _ratio(numerator, denominator)
        out = self.out_proj(context.transpose(1, 2).flatten(2))
        return self.finish(out, weights, need_weights, queries=(n,), keys=(n,))

    #: Queries per chunk of the causal path (:func:`causal_linear_attention`).
    chunk: int = 64

    def _count_and_redraw(self) -> None:
        """Count a training call; every ``redraw_interval``-th call draws new features (as tensor
        operations, so a compiled model redraws too without recompiling)."""
        with torch.no_grad():
            self.calls += 1
            fresh = orthogonal_features(
                self.features, self.head_dim, device=self.projection.device, dtype=self.projection.dtype
            )
            self.projection.copy_(torch.where(self.calls % self.redraw_interval == 0, fresh, self.projection))
