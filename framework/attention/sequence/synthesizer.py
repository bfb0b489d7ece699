"""Synthesizer (Tay, Bahri, Metzler, Juan, Zhao & Zheng, ICML 2021): attention weights that are
synthesised, from each token alone (dense) or learned outright (random), with no query-key
dot product."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, Optional, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..cross.distribution import Softmax
from ..masks import sequence_mask
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt

#: Where the logits come from: an MLP of each token (``dense``) or a learned matrix (``random``).
Variant = Literal["dense", "random"]
VARIANTS: tuple[str, ...] = get_args(Variant)


class Synthesizer(AttentionBlock):
    """Synthetic attention: the weights come from a token alone, or are parameters.

    ::

        dense:   B_i = W_2 relu(W_1 x_i + b_1) + b_2        (one row of N logits per token and head)
        random:  B   = R  (h, N, N) learned;  factorised: R = R_1 R_2^T, R_1, R_2 (h, N, r)
        out      = W_O [softmax(B^j) X W_V^j]_j             (per head j, masked keys left out)

    The logits are made for ``max_len`` keys and cut to the sequence's N; padded keys (and
    with ``causal`` keys j > i) get weight 0.

    Args:
        dim: token features D.
        variant: ``dense`` or ``random``.
        num_heads: h heads.
        max_len: the longest sequence.
        hidden: the width of W_1 (dense; default D).
        rank: r, factorise R into two (N, r) matrices per head (random; default: full R).
        causal: token i attends tokens j <= i only.
        dropout: dropout on the attention weights while training.

    Shapes:
        x (B, N, D) with N <= max_len; ``mask`` (B, N) boolean, True = a real token;
        ``attn_mask`` (N, N), (B, N, N) or (B, h, N, N), True = may attend. Output
        (B, N, D); with ``need_weights=True`` an ``AttentionOutput(output, weights (B, h, N, N))``.

    Captured weights: the (B, h, N, N) weights of each call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        variant: Variant = "dense",
        num_heads: PositiveInt = 8,
        max_len: PositiveInt = 512,
        hidden: Optional[PositiveInt] = None,
        rank: Optional[PositiveInt] = None,
        causal: bool = False,
        dropout: Fraction = 0.0,
    ) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"synthesizer: variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        if dim % num_heads:
            raise ValueError(f"synthesizer: dim={dim} is not divisible by num_heads={num_heads}")
        if rank is not None and variant != "random":
            raise ValueError("synthesizer: rank factorises the random variant's matrix; the dense variant takes none")
        self.dim, self.variant, self.num_heads, self.max_len = dim, variant, num_heads, max_len
        self.causal, self.dropout, self.rank = causal, dropout, rank
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.distribution = Softmax()
        if variant == "dense":
            self.hidden = nn.Linear(dim, hidden or dim)
            self.logits = nn.Linear(hidden or dim, num_heads * max_len)
        elif rank is None:
            self.random = nn.Parameter(torch.randn(num_heads, max_len, max_len) / math.sqrt(max_len))
        else:
            self.factors = nn.Parameter(torch.randn(2, num_heads, max_len, rank) / math.sqrt(rank))

    def synthesised(self, x: Tensor) -> Tensor:
        """The logits B (B, h, N, N) (the random variant's are the same for every example)."""
        b, n = x.shape[:2]
        if self.variant == "dense":  # only the first N of the max_len columns of each head: O(N), not O(max_len)
            rows = self.logits.weight.unflatten(0, (self.num_heads, self.max_len))[:, :n].flatten(0, 1)
            bias = self.logits.bias.unflatten(0, (self.num_heads, self.max_len))[:, :n].flatten()
            logits = F.linear(F.relu(self.hidden(x)), rows, bias).unflatten(-1, (self.num_heads, n))
            return logits.transpose(1, 2)  # (B, N, h, N) -> (B, h, N, N)
        if self.rank is None:
            return self.random[:, :n, :n].expand(b, -1, -1, -1)
        left, right = self.factors[:, :, :n]
        return (left @ right.transpose(-1, -2)).expand(b, -1, -1, -1)

    def forward(
        self,
        x: Tensor,
        mask: Optional[Tensor] = None,
        *,
        attn_mask: Optional[Tensor] = None,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        allowed = sequence_mask(self, x, mask, attn_mask, causal=self.causal)
        n = x.shape[1]
        if n > self.max_len:
            raise ValueError(
                f"{self.block_name}: a sequence of {n} tokens is longer than max_len={self.max_len}; "
                "build the block with a larger max_len"
            )
        weights, _ = self.distribution(self.synthesised(x), allowed)
        weights = self.ablate(weights, allowed)
        dropped = F.dropout(weights, self.dropout) if self.training and self.dropout else weights
        values = self.value(x).unflatten(-1, (self.num_heads, -1)).transpose(1, 2)  # (B, h, N, d)
        out = self.out((dropped @ values).transpose(1, 2).flatten(2))
        return self.finish(
            out, weights if self.wants_weights(need_weights) else None, need_weights, queries=(n,), keys=(n,)
        )


register(
    "synthesizer_dense",
    kind="sequence",
    category="efficient / synthetic attention (dense synthesizer)",
    paper=(
        "Tay, Bahri, Metzler, Juan, Zhao & Zheng, Synthesizer: Rethinking Self-Attention "
        "for Transformer Models, ICML 2021"
    ),
    variant="dense",
)(Synthesizer)
register(
    "synthesizer_random",
    kind="sequence",
    category="efficient / synthetic attention (random synthesizer)",
    paper=(
        "Tay, Bahri, Metzler, Juan, Zhao & Zheng, Synthesizer: Rethinking Self-Attention "
        "for Transformer Models, ICML 2021"
    ),
    variant="random",
)(Synthesizer)
