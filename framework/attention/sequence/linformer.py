"""Linformer (Wang, Li, Khabsa, Fang & Ma, arXiv:2006.04768, 2020): self-attention over keys and
values projected along the sequence axis to a fixed number of rows, linear in the length."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..masks import sequence_mask
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt


@register(
    "linformer",
    kind="sequence",
    category="efficient / low-rank (projected keys and values)",
    paper="Wang, Li, Khabsa, Fang & Ma, Linformer: Self-Attention with Linear Complexity, arXiv:2006.04768, 2020",
)
class Linformer(Attention):
    """Low-rank self-attention: the N keys and values are projected to k rows along the sequence.

    ::

        head_j = softmax(X W_Q^j (E X W_K^j)^T / sqrt(d_h)) (F X W_V^j),   E, F (k, N)
        out    = [head_1; ...; head_h] W_O

    E and F are learned (k, max_len) matrices, shared by the heads, of which the first N
    columns are used; padded tokens are zeroed before the projection, so they add nothing.
    The attention over the k projected rows is the general
    :class:`~framework.attention.Attention` (the fused ``scaled_dot_product_attention``
    without weights): time and memory O(N k) instead of O(N^2).

    Args:
        dim: token features D.
        num_heads: h heads.
        rank: k, the projected length.
        max_len: the longest sequence (the columns of E and F).
        share_kv: one matrix for keys and values (E = F), the paper's key-value sharing.
        dropout: dropout on the attention weights while training.
        bias: biases of the four projections.

    Shapes:
        x (B, N, D) with N <= max_len; ``mask`` (B, N) boolean, True = a real token.
        Output (B, N, D); with ``need_weights=True`` an ``AttentionOutput(output,
        weights (B, h, N, k))``. ``attn_mask`` is refused: the keys are no longer tokens.

    Captured weights: the (B, h, N, k) weights over the projected rows of each call (no key grid:
    the rows are no tokens).
    """

    key_positions = False

    def __init__(
        self,
        dim: PositiveInt,
        num_heads: PositiveInt = 8,
        rank: PositiveInt = 64,
        max_len: PositiveInt = 512,
        share_kv: bool = False,
        dropout: Fraction = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__(dim, score="scaled_dot", num_heads=num_heads, dropout=dropout, bias=bias)
        if rank < 1 or max_len < 1:
            raise ValueError(f"linformer: rank and max_len must be >= 1, got rank={rank}, max_len={max_len}")
        self.rank, self.max_len = rank, max_len
        self.key_rows = nn.Parameter(self._projection(rank, max_len))
        self.value_rows = None if share_kv else nn.Parameter(self._projection(rank, max_len))

    @staticmethod
    def _projection(rank: int, max_len: int) -> Tensor:
        """Xavier-uniform (gain 1/sqrt(2)), as the authors' code initialises E and F."""
        bound = math.sqrt(6.0 / (rank + max_len)) / math.sqrt(2.0)
        return torch.empty(rank, max_len).uniform_(-bound, bound)

    def forward(
        self,
        x: Tensor,
        mask: Optional[Tensor] = None,
        *,
        attn_mask: Optional[Tensor] = None,  # type: ignore[override]
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        sequence_mask(self, x, mask)  # the checks: the keys are projected, the padding zeroes them
        n = x.shape[1]
        if attn_mask is not None:
            raise ValueError(
                f"{self.block_name}: attn_mask is not supported: the keys are k projected rows, not tokens"
            )
        if n > self.max_len:
            raise ValueError(
                f"{self.block_name}: a sequence of {n} tokens is longer than max_len={self.max_len}; "
                "build the block with a larger max_len"
            )
        q, k, v = (self._split(proj(x)) for proj in (self.q_proj, self.k_proj, self.v_proj))
        if mask is not None:
            keep = mask[:, None, :, None].to(k.dtype)
            k, v = k * keep, v * keep
        key_rows = self.key_rows[:, :n].to(k.dtype)
        value_rows = key_rows if self.value_rows is None else self.value_rows[:, :n].to(v.dtype)
        k, v = key_rows @ k, value_rows @ v  # (B, h, k, d)
        context, weights, _ = self._attend(q, k, v, None, None, self.wants_weights(need_weights))
        out = self.out_proj(context.transpose(1, 2).flatten(2))
        return self.finish(out, weights, need_weights, recorded=True)  # _attend recorded them
