"""Adaptive attention span (Sukhbaatar, Grave, Bojanowski & Joulin, ACL 2019): every head
learns how far it looks, through a soft mask over the distance to the query."""

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
from ._windows import window_flags, window_mask, windows, windows_to_dense

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt, Probability


@register(
    "adaptive_span",
    kind="sequence",
    category="efficient / adaptive attention span (learned soft window)",
    paper="Sukhbaatar, Grave, Bojanowski & Joulin, Adaptive Attention Span in Transformers, ACL 2019",
)
class AdaptiveSpanAttention(Attention):
    """Multi-head self-attention whose heads learn their span z_h through a soft mask.

    ::

        m_z(x)  = clamp((R + z - x) / R, 0, 1),   x = |i - j|  (i - j with ``causal``)
        a_ij    = m_z(x_ij) exp(e_ij) / sum_r m_z(x_ir) exp(e_ir),   e_ij = q_i^T k_j / sqrt(d_h)
        span loss = mean_h z_h   (in tokens; a task adds lambda * it to its loss)

    z_h = S clamp(s_h, 0, 1) with S = ``max_span`` and s_h a parameter, so a head attends at
    most S + R tokens away and the mask ramps from 1 to 0 over R tokens after z_h. The
    weights are softmax(e + log m) over the keys with m > 0, which is how the fused
    ``scaled_dot_product_attention`` computes them without weights (log m as its additive
    mask). Since m = 0 beyond S + R, queries are taken in blocks of S + R that attend their
    block and the S + R keys either side (one side with ``causal``): time and memory
    O(N (S + R)), not O(N^2). The span loss pulls the spans in (a kernel that follows the
    current spans rather than S could then skip the keys beyond them).

    Args:
        dim: token features D.
        num_heads: h heads (each its own span).
        max_span: S, the largest span.
        ramp: R, the length of the soft ramp.
        init_span: s_h at the start (z_h = init_span * S).
        causal: token i attends tokens j <= i only (the paper's language-model form).
        dropout: dropout on the attention weights while training.
        bias: biases of the four projections.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real token; ``attn_mask`` (N, N),
        (B, N, N) or (B, h, N, N), True = may attend. Output (B, N, D); with
        ``need_weights=True`` an ``AttentionOutput(output, weights (B, h, N, N))``.

    Captured weights: the (B, h, N, N) weights of each call (zero beyond each head's span).
    """

    def __init__(
        self,
        dim: PositiveInt,
        num_heads: PositiveInt = 8,
        max_span: PositiveInt = 64,
        ramp: PositiveInt = 16,
        init_span: Probability = 0.5,
        causal: bool = False,
        dropout: Fraction = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__(dim, score="scaled_dot", num_heads=num_heads, causal=causal, dropout=dropout, bias=bias)
        self.gives_probe_rows = False  # its own forward: a capture's probe rows are cut from the weights
        if max_span < 1 or ramp < 1 or not 0.0 <= init_span <= 1.0:
            raise ValueError(
                f"adaptive_span: needs max_span >= 1, ramp >= 1 and 0 <= init_span <= 1, "
                f"got {max_span}, {ramp}, {init_span}"
            )
        self.max_span, self.ramp = max_span, ramp
        self.span_fraction = nn.Parameter(torch.full((num_heads,), float(init_span)))

    @property
    def spans(self) -> Tensor:
        """(h,) the current span z_h of each head, in tokens."""
        return self.max_span * self.span_fraction.clamp(0.0, 1.0)

    def span_loss(self) -> Tensor:
        """The mean span of the heads, in tokens: the term a task adds to its loss (times a small
        coefficient, 2e-6 per token in the paper's language models) to keep spans short."""
        return self.spans.mean()

    @property
    def reach(self) -> int:
        """S + R: no head attends further (m = 0 beyond)."""
        return self.max_span + self.ramp

    backends = ("sdpa", "eager")  # fused scaled_dot_product_attention; explicit softmax (framework.attention.backends)

    def forward(
        self,
        x: Tensor,
        mask: Optional[Tensor] = None,
        *,
        attn_mask: Optional[Tensor] = None,  # type: ignore[override]
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        pairs = sequence_mask(self, x, mask, attn_mask)  # (B|1, h|1, N|1, N)
        b, n = x.shape[:2]
        # Blocks of L queries, each attending the keys within S + R of it (one block when N <= S + R).
        block = min(self.reach, n)
        before = self.reach if n > block else 0
        after = 0 if self.causal else before
        blocks = -(-n // block)
        total = blocks * block
        valid = torch.ones(b, n, dtype=torch.bool, device=x.device) if mask is None else mask.bool()
        valid = F.pad(valid, (0, total - n), value=False)
        q, k, v = (
            self._split(F.pad(proj(x), (0, 0, 0, total - n))) for proj in (self.q_proj, self.k_proj, self.v_proj)
        )
        q = q.unflatten(2, (blocks, block))  # (B, h, S, L, d)
        k, v = windows(k, block, before, after), windows(v, block, before, after)  # (B, h, S, K, d)

        index = torch.arange(block, device=x.device)
        distance = index[:, None] + before - torch.arange(before + block + after, device=x.device)[None, :]  # i - j
        soft = (self.ramp + self.spans.to(q.dtype)[:, None, None] - distance.abs().to(q.dtype)) / self.ramp
        soft = soft.clamp(0.0, 1.0)[:, None]  # (h, 1, L, K)
        allowed = window_flags(valid, block, before, after)[:, None, :, None, :] & (soft > 0)  # (B, h, S, L, K)
        if self.causal:
            allowed = allowed & (distance >= 0)
        if attn_mask is not None:
            allowed = allowed & window_mask(pairs, n, block, blocks, before, after)
        log_soft = torch.log(torch.where(soft > 0, soft, 1.0))  # finite, with a finite gradient
        dropout = self.dropout if self.training else 0.0
        weights = None
        if self.wants_weights(need_weights):
            window_weights, _ = self.distribution(self.score(q, k) + log_soft, allowed)
            window_weights = self.ablate(window_weights, allowed)
            context = (F.dropout(window_weights, dropout) if dropout else window_weights) @ v
            weights = windows_to_dense(window_weights, n, before)
        else:
            bias = log_soft.masked_fill(~allowed, torch.finfo(q.dtype).min)
            flat = [t.flatten(1, 2) for t in (q, k, v, bias.expand(b, -1, blocks, -1, -1))]  # (B, h S, ., .)
            context = F.scaled_dot_product_attention(
                *flat[:3], attn_mask=flat[3], dropout_p=dropout, scale=1.0 / math.sqrt(q.shape[-1])
            )
            context = context.unflatten(1, (self.num_heads, blocks)) * allowed.any(-1, keepdim=True)
        context = context.flatten(2, 3)[:, :, :n]  # (B, h, N, d)
        out = self.out_proj(context.transpose(1, 2).flatten(2))
        return self.finish(out, weights, need_weights, queries=(n,), keys=(n,))


def span_loss(model: nn.Module) -> Tensor:
    """The sum of :meth:`AdaptiveSpanAttention.span_loss` over the adaptive-span blocks of
    ``model`` (a zero tensor when it has none): ``loss = task_loss + lambda * span_loss(model)``."""
    losses = [m.span_loss() for m in model.modules() if isinstance(m, AdaptiveSpanAttention)]
    return torch.stack(losses).sum() if losses else torch.zeros(())
