"""Location-aware attention for speech (Chorowski, Bahdanau, Serdyuk, Cho & Bengio, NeurIPS 2015)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional, get_args

import torch
from torch import Tensor, nn

from ..registry import register
from .alignment import Aligned, RecurrentAlignment
from .distribution import Softmax

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveFloat, PositiveInt

#: How the energies become an alignment: a (sharpened) softmax, or the paper's smoothed focus.
Focus = Literal["softmax", "smoothing"]
DISTRIBUTIONS: tuple[str, ...] = get_args(Focus)


@register(
    "location_aware",
    kind="cross",
    category="general / scoring: location-aware (content + previous alignment)",
    paper="Chorowski, Bahdanau, Serdyuk, Cho & Bengio, Attention-Based Models for Speech Recognition, NeurIPS 2015",
)
class LocationAwareAttention(RecurrentAlignment):
    """Location-aware attention: energies from the content and a convolution of the previous alignment.

    ::

        f_i    = F * a_{i-1}                                 (k filters of width r over the key axis)
        e_ij   = w^T tanh(W s_i + V h_j + U f_ij + b)
        a_i    = softmax(beta e_i)                           (``softmax``; beta: ``sharpening``)
        a_i    = sigmoid(e_i) / sum_j sigmoid(e_ij)          (``smoothing``)
        c_i    = sum_j a_ij v_j

    s_i is the query of output step i (the decoder state before it emits token i), h_j the
    keys, v_j the values (default the keys). Through f_i the block knows where it looked at
    the previous step, so it can move forward along the input and tell apart repeated,
    similar fragments (the same digit spoken twice), which content alone cannot. The state
    carried between steps (:class:`~framework.attention.cross.alignment.RecurrentAlignment`)
    is a_{i-1}; before the first step it is uniform over the valid keys (as in ESPnet's
    ``AttLoc``). Masked keys get weight 0 (and enter the convolution as 0).

    Args:
        dim: query features Dq.
        key_dim: key features Dk (default ``dim``). value_dim: Dv (default ``key_dim``).
        hidden: d_w, the width of the energy MLP (default ``max(dim, key_dim)``).
        filters: k, the location features per key. kernel_size: r, odd.
        distribution: ``softmax`` or ``smoothing`` (the paper's smoothed focus, for long inputs).
        sharpening: beta of the softmax (1 = plain softmax).

    Shapes: those of :class:`~framework.attention.cross.alignment.RecurrentAlignment`;
    output (B, M, Dv), the state (B, N).

    Captured weights: the (B, M, N) alignments a_i of a call (M = 1 for one step).
    """

    def __init__(
        self,
        dim: PositiveInt,
        key_dim: Optional[PositiveInt] = None,
        value_dim: Optional[PositiveInt] = None,
        *,
        hidden: Optional[PositiveInt] = None,
        filters: PositiveInt = 10,
        kernel_size: PositiveInt = 31,
        distribution: Focus = "softmax",
        sharpening: PositiveFloat = 1.0,
    ) -> None:
        super().__init__()
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"location_aware: kernel_size must be odd and positive, got {kernel_size}")
        if distribution not in DISTRIBUTIONS:
            raise ValueError(f"location_aware: distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")
        self.dim, self.key_dim = dim, key_dim or dim
        self.value_dim = value_dim or self.key_dim
        self.hidden = hidden or max(dim, self.key_dim)
        self.distribution, self.sharpening = distribution, sharpening
        self.query_proj = nn.Linear(dim, self.hidden)  # W, b
        self.key_proj = nn.Linear(self.key_dim, self.hidden, bias=False)  # V
        self.conv = nn.Conv1d(1, filters, kernel_size, padding=kernel_size // 2, bias=False)  # F
        self.location_proj = nn.Linear(filters, self.hidden, bias=False)  # U
        self.energy = nn.Linear(self.hidden, 1, bias=False)  # w
        self.softmax = Softmax()

    def initial_state(self, valid: Tensor) -> Tensor:
        """Uniform over the valid keys: (B, N)."""
        weights = valid.float()
        return weights / weights.sum(-1, keepdim=True).clamp(min=1)

    def run(self, query: Tensor, keys: Tensor, values: Tensor, valid: Tensor, state: Tensor) -> Aligned:
        queries = self.query_proj(query)  # (B, M, d_w): the content terms, for all steps at once
        content = self.key_proj(keys)  # (B, N, d_w)
        alignments = []
        for i in range(query.shape[1]):
            location = self.location_proj(self.conv(state.unsqueeze(1)).transpose(1, 2))  # (B, N, d_w)
            energies = self.energy(torch.tanh(queries[:, i : i + 1] + content + location)).squeeze(-1)  # (B, N)
            if self.distribution == "smoothing":
                smooth = torch.sigmoid(energies) * valid
                state = smooth / smooth.sum(-1, keepdim=True).clamp(min=torch.finfo(smooth.dtype).tiny)
            else:
                state = self.softmax(self.sharpening * energies, valid)[0]
            alignments.append(state)
        weights = self.ablate(torch.stack(alignments, dim=1), valid.unsqueeze(1))
        return Aligned(weights @ values, weights, state)
