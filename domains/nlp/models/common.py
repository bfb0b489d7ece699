"""Small pieces the NLP models share: what a classifier explains, masked means, weight shapes."""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch
from torch import Tensor, nn

from ..data.tokenization import PAD


class ClassifierOutput(NamedTuple):
    """A classifier's output with its attention (``need_weights=True``).

    logits (B, K); token_weights: how much each token counts in the read-out, (B, N), or
    (B, S, W) for sentences of words (word weight times sentence weight); attention: the
    (B, r, N) rows that Lin et al.'s Frobenius penalty acts on, when the model has them.
    """

    logits: Tensor
    token_weights: Tensor
    attention: Optional[Tensor] = None


def uniform_weights(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """Equal weights over the real tokens (what a mean read-out gives each token)."""
    weights = mask.to(dtype)
    return weights / weights.sum(-1, keepdim=True).clamp(min=1)


def query_key_weights(weights: Tensor) -> Tensor:
    """A block's weights as (B, M, N): heads averaged ((B, h, M, N) from ``Attention``) and
    feature-wise weights too ((B, h, M, N, dv), multi-dimensional); (B, M, N) as is."""
    if weights.dim() == 5:
        weights = weights.mean(-1)
    return weights.mean(1) if weights.dim() == 4 else weights


def scaled_embedding(vocab_size: int, dim: int) -> nn.Embedding:
    """Token embeddings drawn from N(0, 1/D), padding row zero: multiplied by sqrt(D) (Vaswani et
    al.) they have unit scale, like the sinusoidal positions added to them."""
    embedding = nn.Embedding(vocab_size, dim, padding_idx=PAD)
    with torch.no_grad():
        embedding.weight.normal_(0.0, dim**-0.5)
        embedding.weight[PAD].zero_()
    return embedding
