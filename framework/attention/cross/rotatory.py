"""Rotatory attention between a target phrase and its left and right contexts
(LCR-Rot, Zheng & Xia 2018; LCR-Rot-hop, Wallaart & Frasincar 2019)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor

from ..base import AttentionBlock
from ..registry import register
from .attention import Attention

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "rotatory",
    kind="cross",
    category="feature-related / multiplicity: rotatory",
    paper="Zheng & Xia, arXiv:1802.00892, 2018 (LCR-Rot); Wallaart & Frasincar, ESWC 2019 (LCR-Rot-hop)",
    form="aspect triple",
)
class RotatoryAttention(AttentionBlock):
    """Rotatory attention: the target attends the contexts, the contexts attend the target back.

    ::

        r_t  = mean_i t_i                                         (masked average)
        r_l  = attend(L, r_t),   r_r  = attend(R, r_t)
        r_lt = attend(T, r_l),   r_rt = attend(T, r_r)
        attend(K, q) = sum_i softmax_i(tanh(k_i^T W q + b)) k_i   (activated general score)
        hop > 1:  r_l = attend(L, r_lt), r_r = attend(R, r_rt), then r_lt, r_rt again
        r = [r_l; r_r; r_lt; r_rt]

    The four attentions are :class:`~framework.attention.Attention` blocks with
    ``score="activated_general", project=False`` (``left``, ``right``, ``left_target``,
    ``right_target``), shared by all hops.

    Args:
        dim: features D of the three inputs.
        hops: rotations (LCR-Rot-hop when > 1).

    Shapes:
        left (B, Nl, D), target (B, Nt, D), right (B, Nr, D); the masks (B, Nl), (B, Nt),
        (B, Nr) are boolean, True = a real token. Output (B, 4D); an empty input gives
        zero vectors.

    Captured weights: per hop, ``(a_l (B, Nl), a_r (B, Nr), a_lt (B, Nt), a_rt (B, Nt))``.
    """

    def __init__(self, dim: PositiveInt, hops: PositiveInt = 1) -> None:
        super().__init__()
        if hops < 1:
            raise ValueError(f"rotatory: hops must be >= 1, got {hops}")
        self.dim, self.hops = dim, hops
        self.left, self.right, self.left_target, self.right_target = (
            Attention(dim, score="activated_general", project=False) for _ in range(4)
        )

    def forward(
        self,
        left: Tensor,
        target: Tensor,
        right: Tensor,
        left_mask: Optional[Tensor] = None,
        target_mask: Optional[Tensor] = None,
        right_mask: Optional[Tensor] = None,
    ) -> Tensor:
        self.expect("target", target, "B N D", D=self.dim)
        b = target.shape[0]
        for name, x, mask in (("left", left, left_mask), ("target", target, target_mask), ("right", right, right_mask)):
            self.expect(name, x, "B N D", B=b, D=self.dim)
            if mask is not None:
                self.expect(f"{name}_mask", mask, "B N", B=b, N=x.shape[1])
        if target_mask is None:
            r_t = target.mean(1)
        else:
            weights = target_mask.to(target.dtype).unsqueeze(-1)
            r_t = (target * weights).sum(1) / weights.sum(1).clamp(min=1)
        records: Optional[list[Tensor]] = [] if self.wants_weights() else None
        r_lt = r_rt = r_t
        for _ in range(self.hops):
            r_l = self._attend(self.left, r_lt, left, left_mask, records)
            r_r = self._attend(self.right, r_rt, right, right_mask, records)
            r_lt = self._attend(self.left_target, r_l, target, target_mask, records)
            r_rt = self._attend(self.right_target, r_r, target, target_mask, records)
            if records is not None:
                self.record(tuple(records[-4:]))  # one record per hop
        return torch.cat([r_l, r_r, r_lt, r_rt], dim=-1)

    @staticmethod
    def _attend(
        block: Attention, query: Tensor, keys: Tensor, mask: Optional[Tensor], records: Optional[list[Tensor]]
    ) -> Tensor:
        """One activated-general attention (B, D) over (B, N, D); its (B, N) weights go to ``records``."""
        if records is None:
            return block(query, keys, key_padding_mask=mask)
        output, weights, _ = block(query, keys, key_padding_mask=mask, need_weights=True)
        records.append(weights[:, 0])
        return output
