"""Multi-representational attention: dynamic meta-embeddings (Kiela, Wang & Cho, EMNLP 2018),
several embeddings of each token weighed by attention into one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput, ShapeError
from ..cross.distribution import Softmax
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "meta_embedding",
    kind="pooling",
    category="feature-related / representations: multi-representational (meta-embeddings)",
    paper="Kiela, Wang & Cho, Dynamic Meta-Embeddings for Improved Sentence Representations, EMNLP 2018",
    form="embedding sets",
)
class MetaEmbedding(AttentionBlock):
    """Dynamic meta-embedding: E embeddings of a token projected to one size and averaged with attention weights.

    ::

        x'_i = W_i x_i + b_i                   each embedding set i = 1..E to d_t features
        a_i  = softmax_i(w^T x'_i)             self-attentive: which representation counts for this token
        x    = sum_i a_i x'_i

    Every token gets its own weights over the E representations (Kiela et al.'s DME; the
    scalar bias of their score cancels in the softmax). The block pools over the
    representations of one token, not over the tokens.

    Args:
        dim: d_t, the features of the meta-embedding.
        embedding_dims: d_i of each embedding set (default: two sets of ``dim``).

    Shapes:
        ``*embeddings``: E tensors (..., d_i) with the same leading dims (B, N for tokens).
        Output (..., d_t); with ``need_weights=True`` an ``AttentionOutput(output, weights (..., E))``.

    Captured weights: the (..., E) weights a of each call.
    """

    def __init__(self, dim: PositiveInt, embedding_dims: Optional[Sequence[PositiveInt]] = None) -> None:
        super().__init__()
        dims = list(embedding_dims) if embedding_dims is not None else [dim, dim]
        if not dims or any(d < 1 for d in dims):
            raise ValueError(
                f"meta_embedding: embedding_dims must name at least one positive width, got {embedding_dims}"
            )
        self.dim, self.embedding_dims = dim, dims
        self.projections = nn.ModuleList(nn.Linear(d, dim) for d in dims)  # W_i, b_i
        self.query = nn.Parameter(torch.randn(dim) / dim**0.5)  # w
        self.distribution = Softmax()

    def forward(self, *embeddings: Tensor, need_weights: bool = False) -> Tensor | AttentionOutput:
        if len(embeddings) != len(self.projections):
            raise ValueError(
                f"meta_embedding: expected {len(self.projections)} embedding sets "
                f"(embedding_dims={self.embedding_dims}), got {len(embeddings)}"
            )
        lead = embeddings[0].shape[:-1]
        for i, (x, d) in enumerate(zip(embeddings, self.embedding_dims)):
            if x.shape[:-1] != lead or x.shape[-1] != d:
                raise ShapeError(
                    f"meta_embedding: embedding {i} must have shape ({', '.join(map(str, lead))}, {d}), "
                    f"got {tuple(x.shape)}"
                )
        projected = torch.stack([project(x) for project, x in zip(self.projections, embeddings)], -2)  # (..., E, d_t)
        weights, _ = self.distribution(projected @ self.query, None)
        weights = self.ablate(weights)
        output = (weights.unsqueeze(-2) @ projected).squeeze(-2)
        return self.finish(output, weights if need_weights or self.wants_weights() else None, need_weights)
