"""GRU-gated attention (Zhang, Xiong & Su, A GRU-Gated Attention Model for Neural Machine
Translation, IEEE TNNLS 2020; arXiv:1704.08430)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register, unknown_name_message
from .distribution import Softmax
from .score import SCORES, ScoreName

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "gru_gated",
    kind="cross",
    category="general / scoring: GRU-gated keys (query-sensitive annotations)",
    paper="Zhang, Xiong & Su, A GRU-Gated Attention Model for Neural Machine Translation, IEEE TNNLS 2020",
)
class GRUGatedAttention(AttentionBlock):
    """GRU-gated attention (GAtt): every key is refreshed by a GRU step driven by the query
    before it is scored and averaged, so the contexts of different queries differ more.

    ::

        z_ij = sigmoid(W_z s_i + U_z h_j + b_z)              (update gate)
        r_ij = sigmoid(W_r s_i + U_r h_j + b_r)              (reset gate)
        h~_ij = tanh(W s_i + r_ij * (U h_j + b_U) + b_W)
        h'_ij = (1 - z_ij) * h~_ij + z_ij * h_j              (GRU(input s_i, history h_j))
        e_ij = score(s_i, h'_ij),   a_i = softmax(e_i),   c_i = sum_j a_ij h'_ij

    s_i is the query (the decoder's previous state), h_j a key (a source annotation). With plain
    attention the keys are the same for every query, and the paper finds the contexts of
    different target words too alike; the gate makes the annotations, and with them the
    context, depend on the query. The GRU step is ``torch.nn.GRUCell`` (its gate layout, bias
    included), applied to every (query, key) pair.

    Args:
        dim: query features Dq. key_dim: Dk (default ``dim``): the output has Dk features.
        score: the score of the gated keys (``additive`` as in the paper, ``dot``, ...).
        score_kwargs: options of the score (``hidden``, ``activation`` ...).

    Shapes: query (B, M, Dq) or (B, Dq); keys (B, N, Dk); ``key_padding_mask`` (B, N)
    boolean, True = may attend. Output (B, M, Dk) or (B, Dk); with ``need_weights=True``
    ``AttentionOutput(output, weights (B, M, N) or (B, N))``. The (B, M, N, Dk) gated keys
    are built for every call.

    Captured weights: the (B, M, N) weights a of each call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        key_dim: Optional[PositiveInt] = None,
        *,
        score: ScoreName = "additive",
        score_kwargs: Optional[dict[str, Any]] = None,
    ) -> None:
        super().__init__()
        if score not in SCORES:
            raise ValueError(unknown_name_message(score, sorted(SCORES), "score function"))
        self.dim, self.key_dim = dim, key_dim or dim
        self.gate = nn.GRUCell(dim, self.key_dim)
        self.score = SCORES[score](dim, self.key_dim, **(score_kwargs or {}))
        self.softmax = Softmax()

    def forward(
        self, query: Tensor, keys: Tensor, *, key_padding_mask: Optional[Tensor] = None, need_weights: bool = False
    ) -> Tensor | AttentionOutput:
        single = query.dim() == 2
        if single:
            query = query.unsqueeze(1)
        self.expect("query", query, "B M Dq", Dq=self.dim)
        (b, m, _), n = query.shape, keys.shape[1]
        self.expect("keys", keys, "B N Dk", B=b, Dk=self.key_dim)
        if key_padding_mask is not None:
            self.expect("key_padding_mask", key_padding_mask, "B N", B=b, N=n)
        inputs = query.unsqueeze(2).expand(b, m, n, self.dim).reshape(-1, self.dim)
        history = keys.unsqueeze(1).expand(b, m, n, self.key_dim).reshape(-1, self.key_dim)
        gated = self.gate(inputs, history).reshape(b * m, 1, n, self.key_dim)  # each query its own keys
        energies = self.score(query.reshape(b * m, 1, 1, self.dim), gated).reshape(b, m, n)
        mask = None if key_padding_mask is None else key_padding_mask.bool().unsqueeze(1)
        weights = self.ablate(self.softmax(energies, mask)[0], mask)
        output = (weights.unsqueeze(-2) @ gated.reshape(b, m, n, self.key_dim)).squeeze(-2)  # (B, M, Dk)
        if single:
            output, weights = output[:, 0], weights[:, 0]
        return self.finish(output, weights, need_weights, queries=None if single else (m,), keys=(n,))
