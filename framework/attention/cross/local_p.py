"""Luong's local-p attention: a query attends the keys in a window around a position it predicts
(Luong, Pham & Manning, EMNLP 2015), or around its own position (local-m)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register
from .distribution import Softmax
from .score import GeneralScore

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import NonNegativeInt, PositiveInt

#: Where a query's window is centred: a learned position (local-p) or its own (local-m).
Position = Literal["predictive", "monotonic"]


@register(
    "local_p",
    kind="cross",
    category="general / alignment: local (predictive, local-p)",
    paper="Luong, Pham & Manning, Effective Approaches to Attention-based NMT, EMNLP 2015",
)
class LuongLocalAttention(AttentionBlock):
    """Luong's local attention: a softmax over the keys within a window around a position p_t.

    ::

        e_t(s) = h_t^T W_a k_s                              (general score)
        p_t    = S sigmoid(v_p^T tanh(W_p h_t))             (predictive; S valid keys)
        p_t    = t                                          (monotonic)
        a_t(s) = softmax_{|s - p_t| <= D}(e_t(s)) * exp(-(s - p_t)^2 / (2 sigma^2)),  sigma = D / 2
        c_t    = sum_s a_t(s) k_s

    The Gaussian factor is used with predictive positions only; through it p_t is learned.
    Positions count from 0 and valid keys come first (right padding).

    Args:
        dim: query features Dq.
        key_dim: key (= value) features Dk (default ``dim``).
        window: D, the half width of the window.
        position: ``"predictive"`` (local-p) or ``"monotonic"`` (local-m).

    Shapes:
        query (B, M, Dq) or (B, Dq); keys (B, N, Dk); ``key_padding_mask`` (B, N) boolean,
        True = may attend; ``positions`` (B, M) or (B,) overrides the monotonic p_t = t
        (step-by-step decoding). Output (B, M, Dk) or (B, Dk); with ``need_weights=True``
        an ``AttentionOutput(output, weights (B, M, N) or (B, N))``.

    Captured weights: the (B, M, N) weights a_t(s) of each call (M = 1 for a single query).
    """

    def __init__(
        self,
        dim: PositiveInt,
        key_dim: Optional[PositiveInt] = None,
        window: NonNegativeInt = 5,
        position: Position = "predictive",
    ) -> None:
        super().__init__()
        if position not in ("predictive", "monotonic"):
            raise ValueError(f"local_p: position must be 'predictive' or 'monotonic', got {position!r}")
        self.dim, self.key_dim, self.window, self.position = dim, key_dim or dim, window, position
        self.score = GeneralScore(dim, self.key_dim)
        self.distribution = Softmax()
        if position == "predictive":
            self.position_hidden = nn.Linear(dim, dim, bias=False)  # W_p
            self.position_out = nn.Linear(dim, 1, bias=False)  # v_p

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        *,
        key_padding_mask: Optional[Tensor] = None,
        positions: Optional[Tensor] = None,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        single = query.dim() == 2
        if single:
            query = query.unsqueeze(1)
            positions = None if positions is None else positions.reshape(-1, 1)
        self.expect("query", query, "B M Dq", Dq=self.dim)
        (b, m, _), n = query.shape, keys.shape[1]
        self.expect("keys", keys, "B N Dk", B=b, Dk=self.key_dim)
        if key_padding_mask is not None:
            self.expect("key_padding_mask", key_padding_mask, "B N", B=b, N=n)
        valid = (
            torch.ones(b, n, dtype=torch.bool, device=keys.device)
            if key_padding_mask is None
            else key_padding_mask.bool()
        )
        if positions is not None:
            if self.position != "monotonic":
                raise ValueError("local_p: positions are given with position='monotonic' only")
            self.expect("positions", positions, "B M", B=b, M=m)
            p = positions.to(query.dtype)
        elif self.position == "monotonic":
            p = torch.arange(m, dtype=query.dtype, device=query.device).expand(b, m)
        else:
            length = valid.sum(-1, keepdim=True).to(query.dtype)
            p = length * torch.sigmoid(self.position_out(torch.tanh(self.position_hidden(query)))).squeeze(-1)

        distance = torch.arange(n, dtype=query.dtype, device=query.device) - p.unsqueeze(-1)  # (B, M, N)
        mask = (distance.abs() <= self.window) & valid[:, None, :]
        energies = self.score(query.unsqueeze(1), keys.unsqueeze(1)).squeeze(1)  # (B, M, N)
        weights, _ = self.distribution(energies, mask)
        if self.position == "predictive":
            weights = weights * torch.exp(-distance.square() / (2 * (self.window / 2) ** 2))
        weights = self.ablate(weights, mask)
        self.record(weights, queries=(m,), keys=(n,))
        out = weights @ keys
        if single:
            out, weights = out.squeeze(1), weights.squeeze(1)
        return self.finish(out, weights, need_weights, recorded=True)  # recorded with the query axis
