"""Score (alignment) functions e = score(q, K) of the general attention model.

Brauwers & Frasincar (2021), Table 2; Chaudhari et al. (2021), Table 2. Every score
works per head on batched queries and keys:

    q (B, h, M, dq), k (B, h, N, dk)  ->  e (B, h, M, N)

Scores that are a scaled dot product of transformed inputs say so through
:meth:`Score.as_dot_product`, which lets :class:`~framework.attention.Attention` hand them
to the fused ``scaled_dot_product_attention`` kernel. The MLP scores (additive, concat)
can be *feature-wise* (multi-dimensional attention): one energy per value feature,
e (B, h, M, N, dv).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar, Literal, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"tanh": torch.tanh, "relu": F.relu, "selu": F.selu}


def _activation(name: str) -> Callable[[Tensor], Tensor]:
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]


def _per_head(num_heads: int, rows: int, cols: int) -> nn.Parameter:
    """A (num_heads, rows, cols) parameter, Xavier-uniform initialised per head."""
    bound = math.sqrt(6.0 / (rows + cols))
    return nn.Parameter(torch.empty(num_heads, rows, cols).uniform_(-bound, bound))


class Score(nn.Module):
    """Base class: ``forward(q, k)`` gives the energies e (B, h, M, N)."""

    #: whether ``value_dim`` may be given to get one energy per value feature.
    feature_wise: ClassVar[bool] = False
    #: whether it gives a pair of energies per query and key, e (B, h, M, N, 2), for a
    #: distribution that takes pairs (``quasi``).
    pairs: ClassVar[bool] = False

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1) -> None:
        super().__init__()
        self.query_dim, self.key_dim, self.num_heads = query_dim, key_dim, num_heads

    def as_dot_product(self, q: Tensor, k: Tensor) -> Optional[tuple[Tensor, Tensor, float]]:
        """``(q', k', s)`` with score(q, k) = s * q'.k', or None when the score has no such form."""
        return None

    def _same_dims(self) -> None:
        if self.query_dim != self.key_dim:
            raise ValueError(
                f"{type(self).__name__} needs queries and keys of one size, got {self.query_dim} and {self.key_dim}"
            )


class DotScore(Score):
    """Multiplicative score, e = q^T k (Luong et al., EMNLP 2015)."""

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1) -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self._same_dims()

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return q @ k.transpose(-1, -2)

    def as_dot_product(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, float]:
        return q, k, 1.0


class ScaledDotScore(DotScore):
    """Scaled multiplicative score, e = q^T k / sqrt(dk) (Vaswani et al., NeurIPS 2017)."""

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return (q @ k.transpose(-1, -2)) / math.sqrt(self.key_dim)

    def as_dot_product(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, float]:
        return q, k, 1.0 / math.sqrt(self.key_dim)


class GeneralScore(Score):
    """General score, e = q^T W k with W (dq, dk) per head (Luong et al., EMNLP 2015)."""

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1) -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self.weight = _per_head(num_heads, query_dim, key_dim)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return (q @ self.weight) @ k.transpose(-1, -2)

    def as_dot_product(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, float]:
        return q, k @ self.weight.transpose(-1, -2), 1.0  # q^T (W k)


class BiasedGeneralScore(Score):
    """Biased general score, e = k^T (W q + b), W (dk, dq), b (dk) per head (Sordoni et al., 2016)."""

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1) -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self.weight = _per_head(num_heads, key_dim, query_dim)
        self.bias = nn.Parameter(torch.zeros(num_heads, 1, key_dim))

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        query, key, _ = self.as_dot_product(q, k)
        return query @ key.transpose(-1, -2)

    def as_dot_product(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, float]:
        return q @ self.weight.transpose(-1, -2) + self.bias, k, 1.0


class ActivatedGeneralScore(Score):
    """Activated general score, e = act(k^T W q + b), b a scalar per head (Ma et al., IJCAI 2017)."""

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1, activation: str = "tanh") -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self.weight = _per_head(num_heads, key_dim, query_dim)
        self.bias = nn.Parameter(torch.zeros(num_heads, 1, 1))
        self.activation = activation
        self._act = _activation(activation)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return self._act((q @ self.weight.transpose(-1, -2)) @ k.transpose(-1, -2) + self.bias)


class AdditiveScore(Score):
    """Additive score, e = w^T act(W1 q + W2 k + b) (Bahdanau et al., ICLR 2015).

    ``hidden`` is d_w. With ``value_dim`` the output layer is W_d (d_w, dv) and the score is
    feature-wise: e (B, h, M, N, dv) (multi-dimensional attention, Shen et al., AAAI 2018).
    """

    feature_wise = True

    def __init__(
        self,
        query_dim: int,
        key_dim: int,
        num_heads: int = 1,
        hidden: Optional[int] = None,
        activation: str = "tanh",
        value_dim: Optional[int] = None,
    ) -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self.hidden = hidden or max(query_dim, key_dim)
        self.activation = activation
        self._act = _activation(activation)
        self._init_input_weights()
        self.bias = nn.Parameter(torch.zeros(num_heads, 1, self.hidden))
        self.out = _per_head(num_heads, self.hidden, value_dim or 1)
        self.value_dim = value_dim

    def _init_input_weights(self) -> None:
        self.query_weight = _per_head(self.num_heads, self.query_dim, self.hidden)
        self.key_weight = _per_head(self.num_heads, self.key_dim, self.hidden)

    def _query_key(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        return q @ self.query_weight + self.bias, k @ self.key_weight

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        qh, kh = self._query_key(q, k)  # (B, h, M, dw), (B, h, N, dw)
        hidden = self._act(qh.unsqueeze(-2) + kh.unsqueeze(-3))  # (B, h, M, N, dw)
        e = hidden @ self.out.unsqueeze(1)  # (B, h, M, N, dv or 1)
        return e if self.value_dim else e.squeeze(-1)


class ConcatScore(AdditiveScore):
    """Concat score, e = w^T act(W [q; k] + b) (Luong et al., EMNLP 2015).

    One matrix W (d_w, dq + dk) acts on the concatenation; it is applied as its query
    and key column blocks, so the (M x N x (dq + dk)) concatenation is never built.
    """

    def _init_input_weights(self) -> None:
        self.weight = _per_head(self.num_heads, self.query_dim + self.key_dim, self.hidden)

    def _query_key(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        wq, wk = self.weight.split([self.query_dim, self.key_dim], dim=-2)
        return q @ wq + self.bias, k @ wk


class LocationScore(Score):
    """Location-based score, e = W q + b: the energies depend on the position only
    (Luong et al., EMNLP 2015). ``max_len`` bounds the number of keys."""

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1, max_len: int = 128) -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self.max_len = max_len
        self.weight = _per_head(num_heads, query_dim, max_len)
        self.bias = nn.Parameter(torch.zeros(num_heads, 1, max_len))

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        n = k.shape[-2]
        if n > self.max_len:
            raise ValueError(f"location score: {n} keys exceed max_len={self.max_len}")
        return (q @ self.weight + self.bias)[..., :n]


class CosineScore(Score):
    """Cosine similarity score, e = t * q.k / (|q| |k|) (Graves et al., 2014, NTM content
    addressing; ``temperature`` t is the key strength)."""

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1, temperature: float = 1.0) -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self._same_dims()
        self.temperature = temperature

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        query, key, scale = self.as_dot_product(q, k)
        return scale * (query @ key.transpose(-1, -2))

    def as_dot_product(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, float]:
        return F.normalize(q, dim=-1), F.normalize(k, dim=-1), self.temperature


class KernelScore(Score):
    """Kernel feature-map score, e = phi(q)^T phi(k) with phi(x) = elu(x) + 1 >= 0
    (Katharopoulos et al., ICML 2020; generalised kernel of Choromanski et al., ICLR 2021).

    With the ``normalize`` distribution, a_l = e_l / sum_j e_j, attention becomes
    phi(q) (phi(K)^T V) / (phi(q) . sum_j phi(k_j)): linear in the number of keys.
    """

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1) -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self._same_dims()

    @staticmethod
    def feature_map(x: Tensor) -> Tensor:
        return F.elu(x) + 1.0

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return self.feature_map(q) @ self.feature_map(k).transpose(-1, -2)


class DeepScore(AdditiveScore):
    """Deep alignment score, e = w^T E^(L) + b, an MLP of L layers over q and k (Pavlopoulos et al., EMNLP 2017).

    E^(1) = act(W_1 q + W_2 k + b_1) and E^(l) = act(W_l E^(l-1) + b_l) for l = 2..L (``layers``).
    ``layers=1`` is the additive score (plus the output bias b, which only a distribution
    other than softmax sees). All hidden layers have ``hidden`` (d_w) features; with
    ``value_dim`` the output layer gives one energy per value feature, as in ``AdditiveScore``.
    """

    def __init__(
        self,
        query_dim: int,
        key_dim: int,
        num_heads: int = 1,
        hidden: Optional[int] = None,
        layers: int = 2,
        activation: str = "tanh",
        value_dim: Optional[int] = None,
    ) -> None:
        super().__init__(query_dim, key_dim, num_heads, hidden, activation, value_dim)
        if layers < 1:
            raise ValueError(f"deep score: layers must be at least 1, got {layers}")
        self.layers = layers
        self.hidden_weights = nn.ParameterList(
            _per_head(num_heads, self.hidden, self.hidden) for _ in range(layers - 1)
        )
        self.hidden_biases = nn.ParameterList(
            nn.Parameter(torch.zeros(num_heads, 1, 1, self.hidden)) for _ in range(layers - 1)
        )
        self.out_bias = nn.Parameter(torch.zeros(num_heads, 1, 1, value_dim or 1))

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        qh, kh = self._query_key(q, k)
        hidden = self._act(qh.unsqueeze(-2) + kh.unsqueeze(-3))  # E^(1) (B, h, M, N, dw)
        for weight, bias in zip(self.hidden_weights, self.hidden_biases):
            hidden = self._act(hidden @ weight.unsqueeze(1) + bias)  # E^(l)
        e = hidden @ self.out.unsqueeze(1) + self.out_bias  # (B, h, M, N, dv or 1)
        return e if self.value_dim else e.squeeze(-1)


class CoDAScore(Score):
    """Compositional de-attention pair, e = q.k / sqrt(dk) and g = -|q - k|_1 / sqrt(dk), for the
    ``quasi`` distribution (Tay, Luu, Zhang, Wang & Hui, NeurIPS 2019).

    The affinity e says whether a value is added (e > 0) or subtracted (e < 0); the negative
    L1 distance g gates it (far keys are deleted). Energies e (B, h, M, N, 2) = [e; g].
    """

    pairs = True

    def __init__(self, query_dim: int, key_dim: int, num_heads: int = 1) -> None:
        super().__init__(query_dim, key_dim, num_heads)
        self._same_dims()

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        scale = 1.0 / math.sqrt(self.key_dim)
        affinity = (q @ k.transpose(-1, -2)) * scale
        return torch.stack([affinity, -torch.cdist(q, k, p=1) * scale], dim=-1)


#: The names of the score functions, the domain of a block's ``score`` (the keys of :data:`SCORES`).
ScoreName = Literal[
    "additive",
    "dot",
    "scaled_dot",
    "general",
    "biased_general",
    "activated_general",
    "concat",
    "location",
    "cosine",
    "kernel",
    "coda",
    "deep",
]

#: Score functions by name, as ``Attention(score=...)`` takes them.
SCORES: dict[str, type[Score]] = {
    "additive": AdditiveScore,
    "dot": DotScore,
    "scaled_dot": ScaledDotScore,
    "general": GeneralScore,
    "biased_general": BiasedGeneralScore,
    "activated_general": ActivatedGeneralScore,
    "concat": ConcatScore,
    "location": LocationScore,
    "cosine": CosineScore,
    "kernel": KernelScore,
    "coda": CoDAScore,
    "deep": DeepScore,
}
