"""Transformer-XL attention (Dai, Yang, Yang, Carbonell, Le & Salakhutdinov, ACL 2019): segments
that attend to themselves and to the previous segment's states (kept out of the gradient),
with relative position scores and the global biases u and v."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..masks import sequence_mask
from ..registry import register
from ._windows import window_mask, windows_to_dense

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt


def relative_sinusoid(distances: Tensor, dim: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """(K, dim) sinusoid encodings R_d = [sin(d f); cos(d f)], f_i = 10000^(-2i/dim), of the
    relative distances d (K,), as Transformer-XL builds them (negative distances too); computed
    in float32 at least."""
    dtype = torch.promote_types(dtype, torch.float32)
    frequency = torch.exp(torch.arange(0, dim, 2, device=distances.device, dtype=dtype) * (-math.log(10000.0) / dim))
    angles = distances.to(dtype)[:, None] * frequency[None]
    return torch.cat([angles.sin(), angles.cos()], -1)[:, :dim]


@register(
    "transformer_xl",
    kind="sequence",
    category="efficient / segment recurrence with relative positions",
    paper="Dai, Yang, Yang, Carbonell, Le & Salakhutdinov, Transformer-XL: Attentive Language Models beyond a "
    "Fixed-Length Context, ACL 2019",
)
class TransformerXLAttention(Attention):
    """Segment-recurrent self-attention with relative positions (Transformer-XL).

    The sequence is cut into segments of L tokens; segment s attends its own tokens and the
    previous segment's, whose states enter with a stop-gradient (the paper's memory
    h~_s = [SG(h_{s-1}); h_s]). For query i and key j at distance i - j::

        A_ij = (q_i + u)^T k_j + (q_i + v)^T W_R R_{i-j}       (per head; R sinusoids)
        a_ij = exp(A_ij / sqrt(d_h)) / sum_r exp(A_ir / sqrt(d_h))   over the 2L keys
        out_i = W_O [sum_j a_ij v_j]

    (q_i^T k_j content, q_i^T W_R R_{i-j} content-dependent position, u^T k_j a global content
    bias, v^T W_R R_{i-j} a global position bias). Stacked layers reach one segment further
    back each, so cost is O(N L) while the context grows with depth. Run over a whole
    sequence, each layer's memory for segment s is its own input at segment s - 1, which is
    what the paper's recurrence keeps between steps. ``memory`` gives the first segment the
    states of a previous call (its last L input positions), for inputs read piece by piece.
    Without weights the fused ``scaled_dot_product_attention`` runs, with the position term
    as its additive mask.

    Args:
        dim: token features D.
        num_heads: h heads.
        segment: L, the segment (and memory) length.
        causal: token i attends tokens j <= i only (the memory is always visible).
        dropout: dropout on the attention weights while training.
        bias: biases of the query, key, value and output projections.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real token; ``attn_mask`` (N, N),
        (B, N, N) or (B, h, N, N), True = may attend (and-ed with the segment pattern);
        ``memory`` (B, L, D). Output (B, N, D); with ``need_weights=True`` an
        ``AttentionOutput(output, weights (B, h, N, N))`` over the sequence's tokens (zero
        outside a token's segment and the previous one; weights on ``memory`` left out).

    Captured weights: the (B, h, N, N) weights of each call, as returned.
    """

    def __init__(
        self,
        dim: PositiveInt,
        num_heads: PositiveInt = 8,
        segment: PositiveInt = 64,
        causal: bool = False,
        dropout: Fraction = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__(dim, score="scaled_dot", num_heads=num_heads, causal=causal, dropout=dropout, bias=bias)
        self.gives_probe_rows = False  # its own forward: a capture's probe rows are cut from the weights
        if segment < 1:
            raise ValueError(f"transformer_xl: segment must be >= 1, got {segment}")
        self.segment, self.head_dim = segment, dim // num_heads
        self.position_proj = nn.Linear(dim, num_heads * self.head_dim, bias=False)  # W_R
        self.content_bias = nn.Parameter(torch.zeros(num_heads, self.head_dim))  # u
        self.position_bias = nn.Parameter(torch.zeros(num_heads, self.head_dim))  # v

    backends = ("sdpa", "eager")  # fused scaled_dot_product_attention; explicit softmax (framework.attention.backends)

    def forward(
        self,
        x: Tensor,
        mask: Optional[Tensor] = None,
        *,
        attn_mask: Optional[Tensor] = None,  # type: ignore[override]
        need_weights: bool = False,
        memory: Optional[Tensor] = None,
    ) -> Tensor | AttentionOutput:
        pairs = sequence_mask(self, x, mask, attn_mask)  # (B|1, h|1, N|1, N)
        b, n, _ = x.shape
        seg = self.segment
        if memory is not None:
            self.expect("memory", memory, "B L D", B=b, L=seg, D=self.dim)
        segments = -(-n // seg)
        total = segments * seg
        valid = torch.ones(b, n, dtype=torch.bool, device=x.device) if mask is None else mask.bool()
        padded = F.pad(x, (0, 0, 0, total - n))
        valid = F.pad(valid, (0, total - n), value=False)
        # The memory of segment s: the states of segment s - 1 (or ``memory``), out of the gradient.
        first = padded.new_zeros(b, seg, self.dim) if memory is None else memory
        previous = torch.cat([first, padded[:, : total - seg]], 1).detach()
        previous_valid = torch.cat([valid.new_full((b, seg), memory is not None), valid[:, : total - seg]], 1)

        def segmented(t: Tensor) -> Tensor:  # (B, total, h*d) -> (B, h, S, L, d)
            return self._split(t).unflatten(2, (segments, seg))

        q = segmented(self.q_proj(padded))
        keys = torch.cat([segmented(self.k_proj(previous)), segmented(self.k_proj(padded))], -2)  # (B, h, S, 2L, d)
        values = torch.cat([segmented(self.v_proj(previous)), segmented(self.v_proj(padded))], -2)
        allowed = torch.cat([previous_valid.unflatten(1, (segments, seg)), valid.unflatten(1, (segments, seg))], -1)
        allowed = allowed[:, None, :, None, :]  # (B, 1, S, 1, 2L)
        query_pos = torch.arange(seg, device=x.device)[:, None]
        key_pos = torch.arange(2 * seg, device=x.device)[None, :] - seg  # memory keys at -L .. -1
        if self.causal:
            allowed = allowed & (key_pos <= query_pos)
        if attn_mask is not None:  # the mask's entries for each segment and its memory (a given memory stays visible)
            allowed = allowed & window_mask(pairs, n, seg, segments, before=seg, after=0, ahead=True)

        # Position scores (q_i + v)^T W_R R_{i-j} for the 3L - 1 distances, then read per (i, j).
        distances = torch.arange(1 - seg, 2 * seg, device=x.device)
        positions = self.position_proj(relative_sinusoid(distances, self.dim, x.dtype).to(x.dtype))  # (3L - 1, h*d)
        positions = positions.unflatten(-1, (self.num_heads, -1)).permute(1, 2, 0)[:, None]  # (h, 1, d, 3L - 1)
        by_distance = (q + self.position_bias[:, None, None]) @ positions  # (B, h, S, L, 3L - 1)
        index = (query_pos - key_pos) - (1 - seg)  # (L, 2L) distance i - j as an index
        position_scores = by_distance.gather(-1, index.expand(*by_distance.shape[:-1], -1))
        content_q = q + self.content_bias[:, None, None]
        scale = 1.0 / math.sqrt(self.head_dim)
        dropout = self.dropout if self.training else 0.0

        weights = None
        if self.wants_weights(need_weights):
            scores = (content_q @ keys.transpose(-1, -2) + position_scores) * scale
            segment_weights, _ = self.distribution(scores, allowed)
            segment_weights = self.ablate(segment_weights, allowed)
            context = (F.dropout(segment_weights, dropout) if dropout else segment_weights) @ values
            weights = windows_to_dense(segment_weights, n, before=seg)
        else:
            bias = (position_scores * scale).masked_fill(~allowed, torch.finfo(q.dtype).min)
            flat = [t.flatten(1, 2) for t in (content_q, keys, values, bias)]  # (B, h*S, ., .)
            context = F.scaled_dot_product_attention(*flat[:3], attn_mask=flat[3], dropout_p=dropout, scale=scale)
            context = context.unflatten(1, (self.num_heads, segments)) * allowed.any(-1, keepdim=True)
        context = context.flatten(2, 3)[:, :, :n]  # (B, h, N, d)
        out = self.out_proj(context.transpose(1, 2).flatten(2))
        return self.finish(out, weights, need_weights, queries=(n,), keys=(n,))
