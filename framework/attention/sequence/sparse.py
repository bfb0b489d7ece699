"""Sparse Transformer patterns (Child, Gray, Radford & Sutskever, arXiv:1904.10509, 2019):
self-attention restricted to a strided or a fixed factorised pattern, as a dense masked
attention (the reference, and the path on the CPU) or through FlexAttention block masks."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, Optional, get_args

import torch
from torch import Tensor
from torch.nn.attention.flex_attention import AuxRequest, BlockMask, create_block_mask, flex_attention

from ..base import AttentionOutput
from ..cross.attention import Attention
from ..masks import sequence_mask
from ..probes import ProbeRows
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt

#: The patterns of Child et al.: ``strided`` (a band and every l-th token) or ``fixed`` (blocks and their summaries).
Pattern = Literal["strided", "fixed"]
PATTERNS: tuple[str, ...] = get_args(Pattern)
#: The implementations: ``dense`` (the pattern as a mask), ``flex`` (FlexAttention), ``auto`` (flex where it fits).
Impl = Literal["auto", "dense", "flex"]
IMPLS: tuple[str, ...] = get_args(Impl)


def pattern_rule(pattern: str, stride: int, summary: int, causal: bool) -> Callable[[Tensor, Tensor], Tensor]:
    """The pattern as a function of query and key indices (broadcasting tensors) -> bool.

    ``strided``: |i - j| < l (the previous l tokens, and the next l when not causal) or
    (i - j) mod l == 0 (every l-th token). ``fixed``: floor(i / l) == floor(j / l) (the same
    block of l tokens) or j mod l >= l - c (the last c tokens of every block, which summarise
    it). ``causal`` also needs j <= i. The two parts are the two heads of the paper's
    factorisation, merged into one pattern that every head attends (its "merged head").
    """

    def rule(i: Tensor, j: Tensor) -> Tensor:
        if pattern == "strided":
            allowed = ((i - j).abs() < stride) | ((i - j) % stride == 0)
        else:
            allowed = (i // stride == j // stride) | (j % stride >= stride - summary)
        return allowed & (j <= i) if causal else allowed

    return rule


@lru_cache(maxsize=32)
def pattern_mask(n: int, pattern: str, stride: int, summary: int, causal: bool, device: torch.device) -> Tensor:
    """(n, n) boolean mask of the pattern, True = may attend (built once per size, outside
    inference mode so that a mask first made in validation can be saved for backward)."""
    with torch.inference_mode(False):
        index = torch.arange(n, device=device)
        return pattern_rule(pattern, stride, summary, causal)(index[:, None], index[None, :])


@lru_cache(maxsize=32)
def pattern_block_mask(
    n: int, pattern: str, stride: int, summary: int, causal: bool, device: torch.device
) -> BlockMask:
    """FlexAttention's block mask of the pattern (built once per size): the key blocks that
    a query block needs, and, inside partly covered blocks, the rule itself."""
    rule = pattern_rule(pattern, stride, summary, causal)
    with torch.inference_mode(False):
        return create_block_mask(lambda b, h, i, j: rule(i, j), None, None, n, n, device=device)


_compiled_flex: Optional[Callable[..., Tensor]] = None


def _flex(*args, **kwargs) -> Tensor:
    """FlexAttention: compiled (fused kernels) on CUDA; the unfused reference elsewhere, which
    runs forward only (torch 2.11 has no FlexAttention backward on the CPU)."""
    global _compiled_flex
    if not args[0].is_cuda or torch.compiler.is_compiling():
        return flex_attention(*args, **kwargs)
    if _compiled_flex is None:
        _compiled_flex = torch.compile(flex_attention)  # shapes turn dynamic once a second length is seen
    return _compiled_flex(*args, **kwargs)


class SparseAttention(Attention):
    """Sparse Transformer self-attention: each token attends a strided or a fixed pattern.

    ::

        strided:  S_i = {j : |i - j| < l} U {j : (i - j) mod l = 0}
        fixed:    S_i = {j : floor(i / l) = floor(j / l)} U {j : j mod l >= l - c}
        a_ij = exp(e_ij) / sum_{r in S_i} exp(e_ir),  e_ij = (W_Q x_i)^T (W_K x_j) / sqrt(d_h)
        out_i = W_O [sum_{j in S_i} a_ij W_V x_j]   (per head, heads concatenated)

    With l about sqrt(N) a token attends O(sqrt(N)) others, and any token reaches any other
    in two layers. ``causal`` keeps j <= i (the paper's autoregressive form).

    Two implementations give the same numbers: ``dense``, the general
    :class:`~framework.attention.Attention` with the pattern as its ``attn_mask`` (cached per
    length; the fused ``scaled_dot_product_attention`` without weights), the reference and
    the path on the CPU; and ``flex``, ``torch.nn.attention.flex_attention`` with a cached
    block mask of the pattern and the padding as a score modification, which skips the
    key blocks a query block does not need and never builds the (N, N) scores (compiled on
    CUDA). ``auto`` takes ``flex`` on CUDA when no weights are wanted, no dropout is set
    and the head width is a power of two of at least 16, else ``dense``. A block of the mask
    is skipped only when the pattern misses it entirely: the strided columns and the fixed
    summaries touch every key block, so the saving of ``flex`` is memory (no N x N matrix)
    more than time.

    Args:
        dim: token features D.
        pattern: ``strided`` or ``fixed``.
        stride: l, the stride (strided) or the block length (fixed).
        summary: c, the summary tokens at the end of each block (fixed).
        num_heads: h heads.
        causal: also forbid j > i.
        dropout: dropout on the attention weights while training (dense only).
        impl: ``auto``, ``dense`` or ``flex``.

    Shapes:
        x (B, N, D); ``mask`` (B, N) boolean, True = a real token; ``attn_mask`` (N, N),
        (B, N, N) or (B, h, N, N), True = may attend, and-ed with the pattern (dense).
        Output (B, N, D); with ``need_weights=True`` an ``AttentionOutput(output, weights
        (B, h, N, N))``, zero outside the pattern.

    Captured weights: the (B, h, N, N) weights of each call (zero outside the pattern). A
    capture with probes gets the probe queries' rows on either path; on ``flex`` they are
    normalised by the kernel's own log-sum-exp (``return_aux``), kept as the record's ``lse``.
    """

    def __init__(
        self,
        dim: PositiveInt,
        pattern: Pattern = "strided",
        stride: PositiveInt = 32,
        summary: PositiveInt = 4,
        num_heads: PositiveInt = 8,
        causal: bool = False,
        dropout: Fraction = 0.0,
        impl: Impl = "auto",
    ) -> None:
        super().__init__(dim, score="scaled_dot", num_heads=num_heads, causal=causal, dropout=dropout)
        if pattern not in PATTERNS:
            raise ValueError(f"sparse attention: pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}")
        if impl not in IMPLS:
            raise ValueError(f"sparse attention: impl must be one of {', '.join(IMPLS)}, got {impl!r}")
        if stride < 1 or (pattern == "fixed" and not 1 <= summary <= stride):
            raise ValueError(
                f"sparse attention: needs stride >= 1 (and 1 <= summary <= stride for the fixed pattern), "
                f"got stride={stride}, summary={summary}"
            )
        if impl == "flex" and dropout:
            raise ValueError("sparse attention: impl='flex' has no attention dropout; set dropout=0 or impl='dense'")
        self.pattern, self.stride, self.summary, self.impl = pattern, stride, summary, impl

    @property
    def backends(self) -> tuple[str, ...]:  # type: ignore[override]
        """``flex``, ``sdpa`` (``dense`` without weights) and ``eager`` (``dense`` with explicit
        weights), the default first: ``impl``'s, and for ``auto`` on the parameters' device."""
        device = next(self.parameters()).device
        flex = self.impl == "flex" or (
            self.impl == "auto" and device.type == "cuda" and self._flex_fits() and not self.dropout
        )
        return ("flex", "sdpa", "eager") if flex else ("sdpa", "eager", "flex")

    def backend_missing(self, name: str, device: torch.device, training: bool = False) -> Optional[str]:
        if name == "flex" and training and device.type == "cpu":
            return "FlexAttention has no backward on the CPU (torch 2.11): train with sdpa or eager, or on CUDA"
        return None

    def _flex_fits(self) -> bool:
        """Whether the head width is what the CUDA kernels of FlexAttention take (a power of two >= 16)."""
        head_dim = self.dim // self.num_heads
        return head_dim >= 16 and head_dim & (head_dim - 1) == 0

    def uses_flex(self, x: Tensor, need_weights: bool, attn_mask: Optional[Tensor]) -> bool:
        """Whether this call runs on FlexAttention (see ``impl``; a chosen backend overrides it)."""
        impl = {"flex": "flex", "sdpa": "dense", "eager": "dense"}.get(self.chosen_backend or "", self.impl)
        if impl == "dense":
            return False
        if impl == "flex":
            if self.wants_weights(need_weights) or attn_mask is not None:
                raise ValueError(
                    f"{self.block_name}: impl='flex' gives no weights and takes no attn_mask; "
                    "use impl='dense' (or 'auto') to have them"
                )
            return True
        return (
            x.is_cuda
            and self._flex_fits()
            and not self.wants_weights(need_weights)
            and attn_mask is None
            and not (self.training and self.dropout)
        )

    def forward(
        self,
        x: Tensor,
        mask: Optional[Tensor] = None,
        *,
        attn_mask: Optional[Tensor] = None,  # type: ignore[override]
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        if self.uses_flex(x, need_weights, attn_mask):
            sequence_mask(self, x, mask)  # the checks: the padding is a score modification, the pattern a block mask
            return self._flex_forward(x, mask)
        allowed = sequence_mask(
            self,
            x,
            mask,
            attn_mask,
            structure=lambda n, device: pattern_mask(  # Attention adds causal
                n, self.pattern, self.stride, self.summary, False, device
            ),
        )
        return super().forward(x, attn_mask=allowed, need_weights=need_weights)

    def _flex_forward(self, x: Tensor, mask: Optional[Tensor]) -> Tensor:
        n = x.shape[1]
        q, k, v = (self._split(proj(x)) for proj in (self.q_proj, self.k_proj, self.v_proj))
        blocks = pattern_block_mask(n, self.pattern, self.stride, self.summary, self.causal, x.device)
        score_mod = None
        if mask is not None:

            def score_mod(score: Tensor, b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
                return torch.where(mask[b, j], score, float("-inf"))

        if not self.probing():
            context = _flex(q, k, v, score_mod=score_mod, block_mask=blocks)
        else:  # the kernel's log-sum-exp normalises the probe rows
            context, aux = _flex(q, k, v, score_mod=score_mod, block_mask=blocks, return_aux=AuxRequest(lse=True))
            self._flex_probe(q, k, mask, aux.lse)
        return self.out_proj(context.transpose(1, 2).flatten(2))

    def _flex_probe(self, q: Tensor, k: Tensor, mask: Optional[Tensor], lse: Tensor) -> None:
        """The rows of a capture's probe queries, exp(q_P k^T / sqrt(d) - lse_P) over the pattern
        and the real keys, from FlexAttention's log-sum-exp lse (B, h, N)."""
        n = q.shape[-2]
        rule = pattern_rule(self.pattern, self.stride, self.summary, self.causal)

        def rows(index: Tensor) -> ProbeRows:
            valid = rule(index[:, None], torch.arange(n, device=q.device)[None, :])[None, None]  # (1, 1, P, N)
            if mask is not None:
                valid = valid & mask.bool()[:, None, None, :]
            logits = (q.index_select(2, index) @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
            weights = torch.where(valid, (logits - lse.index_select(2, index).unsqueeze(-1)).exp(), 0.0)
            return ProbeRows(weights, valid, logits)

        self.record_rows(rows, queries=(n,), keys=(n,), device=q.device, lse=lse)


register(
    "sparse_strided",
    kind="sequence",
    category="efficient / sparse pattern (strided)",
    paper=(
        "Child, Gray, Radford & Sutskever, Generating Long Sequences with Sparse Transformers, arXiv:1904.10509, 2019"
    ),
    pattern="strided",
)(SparseAttention)
register(
    "sparse_fixed",
    kind="sequence",
    category="efficient / sparse pattern (fixed)",
    paper=(
        "Child, Gray, Radford & Sutskever, Generating Long Sequences with Sparse Transformers, arXiv:1904.10509, 2019"
    ),
    pattern="fixed",
)(SparseAttention)
