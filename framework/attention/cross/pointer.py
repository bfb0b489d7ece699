"""Pointing: attention whose distribution is the output. Pointer networks (Vinyals, Fortunato &
Jaitly, NeurIPS 2015) and the copy mechanism of pointer-generator networks (See, Liu & Manning,
ACL 2017)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..registry import register, unknown_name_message
from .score import SCORES, ScoreName

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


def _lowest(x: Tensor) -> float:
    return torch.finfo(x.dtype).min


@register(
    "pointer",
    kind="cross",
    category="architecture / pointing: pointer network (the distribution is the output)",
    paper="Vinyals, Fortunato & Jaitly, Pointer Networks, NeurIPS 2015",
    form="pointer",
)
class PointerAttention(AttentionBlock):
    """Pointer attention: the attention distribution over the input positions is the output.

    ::

        u_ij = score(d_i, e_j)                   (additive in the paper: v^T tanh(W1 e_j + W2 d_i))
        p(y_i = j | y_<i, x) = softmax_j(u_ij)   over the allowed positions

    so the number of classes at step i is the length of the input, and an output is a
    sequence of input positions (an ordering, a tour, a span). The block returns the
    log-probabilities, the input of a negative log-likelihood.

    Args:
        dim: query features Dq (the decoder state d_i). key_dim: Dk (the encoder states e_j).
        score: the score function (``additive``, ``general``, ``dot`` ...).
        score_kwargs: its options (``hidden``, ``activation`` ...).

    Shapes: query (B, M, Dq) or (B, Dq); keys (B, N, Dk); ``key_padding_mask`` (B, N) and
    ``attn_mask`` (M, N) or (B, M, N) boolean, True = may point there (an ``attn_mask`` can
    forbid the positions already chosen). Output: log p (B, M, N) or (B, N), -inf at the
    positions not allowed; with ``need_weights=True`` ``AttentionOutput(log p, p)``.

    Captured weights: the (B, M, N) distributions p of each call.
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
        self.score = SCORES[score](dim, self.key_dim, **(score_kwargs or {}))

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        *,
        key_padding_mask: Optional[Tensor] = None,
        attn_mask: Optional[Tensor] = None,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        single = query.dim() == 2
        if single:
            query = query.unsqueeze(1)
        self.expect("query", query, "B M Dq", Dq=self.dim)
        (b, m, _), n = query.shape, keys.shape[1]
        self.expect("keys", keys, "B N Dk", B=b, Dk=self.key_dim)
        allowed = torch.ones(b, m, n, dtype=torch.bool, device=keys.device)
        if key_padding_mask is not None:
            self.expect("key_padding_mask", key_padding_mask, "B N", B=b, N=n)
            allowed = allowed & key_padding_mask.bool().unsqueeze(1)
        if attn_mask is not None:
            if attn_mask.dtype != torch.bool:
                raise ValueError(
                    f"{self.block_name}: attn_mask must be boolean (True = may point), got {attn_mask.dtype}"
                )
            allowed = allowed & attn_mask.reshape(-1, m, n)
        energies = self.score(query.unsqueeze(1), keys.unsqueeze(1)).squeeze(1)  # (B, M, N)
        log_p = energies.masked_fill(~allowed, _lowest(energies)).log_softmax(-1)
        weights = None
        if self.wants_weights(need_weights):
            weights = self.ablate(log_p.exp() * allowed, allowed)
            if self.ablation is not None:
                log_p = weights.log()
        log_p = log_p.masked_fill(~allowed, float("-inf"))
        if single:
            log_p, weights = log_p[:, 0], None if weights is None else weights[:, 0]
        return self.finish(log_p, weights, need_weights, queries=None if single else (m,), keys=(n,))


@register(
    "pointer_generator",
    kind="cross",
    category="architecture / pointing: copy mechanism (pointer-generator)",
    paper="See, Liu & Manning, Get To The Point: Summarization with Pointer-Generator Networks, ACL 2017",
    form="copy",
)
class PointerGenerator(AttentionBlock):
    """The copy mechanism of pointer-generator networks: a gate mixes the vocabulary
    distribution with the attention over the source, scatter-added onto the source's tokens.

    ::

        p_gen = sigmoid(w^T f_t + b)           f_t: the decoder's features at step t
                                               (See et al.: [h*_t; s_t; x_t], context, state, input)
        P(w)  = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a_ti

    a_t is the decoder's attention over the source tokens x_i (its copy distribution).
    Source tokens outside the vocabulary (ids >= V, numbered per example by the caller) get
    the extra ids V .. V' - 1 of an extended vocabulary, which only copying can produce.
    The block returns log P; P is floored at the smallest normal number first (a word neither
    in the vocabulary nor in the source has P = 0).

    Args:
        dim: Df, the features of the gate.

    Shapes: features (B, M, Df); weights (B, M, N), the attention over the source (rows sum
    to 1); source (B, N) long ids; vocab_logits (B, M, V); ``key_padding_mask`` (B, N)
    boolean, True = a real source token; ``extended_vocab_size`` V' >= V (default V; every
    source id must be below it). Output: log P (B, M, V'); with ``need_weights=True``
    ``AttentionOutput(log P, copy weights (B, M, N))``.

    Captured weights: the (B, M, N) copy distributions a of each call.
    """

    def __init__(self, dim: PositiveInt) -> None:
        super().__init__()
        self.dim = dim
        self.gate = nn.Linear(dim, 1)  # w, b

    def forward(
        self,
        features: Tensor,
        weights: Tensor,
        source: Tensor,
        vocab_logits: Tensor,
        *,
        key_padding_mask: Optional[Tensor] = None,
        extended_vocab_size: Optional[int] = None,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        self.expect("features", features, "B M Df", Df=self.dim)
        (b, m, _), n, vocab = features.shape, source.shape[-1], vocab_logits.shape[-1]
        self.expect("weights", weights, "B M N", B=b, M=m)
        self.expect("source", source, "B N", B=b, N=weights.shape[-1])
        self.expect("vocab_logits", vocab_logits, "B M V", B=b, M=m)
        size = vocab if extended_vocab_size is None else extended_vocab_size
        if size < vocab:
            raise ValueError(f"{self.block_name}: extended_vocab_size={size} is smaller than the vocabulary ({vocab})")
        valid = None
        if key_padding_mask is not None:
            self.expect("key_padding_mask", key_padding_mask, "B N", B=b, N=n)
            valid = key_padding_mask.bool().unsqueeze(1)
        weights = self.ablate(weights if valid is None else weights * valid, valid)
        generate = torch.sigmoid(self.gate(features))  # p_gen (B, M, 1)
        vocabulary = vocab_logits.softmax(-1)
        if size > vocab:
            vocabulary = torch.cat([vocabulary, vocabulary.new_zeros(b, m, size - vocab)], dim=-1)
        copied = vocabulary.new_zeros(b, m, size).scatter_add(-1, source.unsqueeze(1).expand(b, m, n), weights)
        mixed = generate * vocabulary + (1 - generate) * copied
        log_p = mixed.clamp_min(torch.finfo(mixed.dtype).tiny).log()
        return self.finish(log_p, weights, need_weights, queries=(m,), keys=(n,))
