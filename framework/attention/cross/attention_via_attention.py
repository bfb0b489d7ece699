"""Attention-via-attention (Zhao & Zhang, AAAI 2018): a query attends the word level first,
and the word context it finds guides its attention over the characters (top-down)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import torch
from torch import Tensor

from ..base import AttentionBlock, AttentionOutput
from ..registry import register
from .attention import Attention
from .score import ScoreName

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "attention_via_attention",
    kind="cross",
    category="feature-related / levels: attention-via-attention (top-down)",
    paper="Zhao & Zhang, Attention-via-Attention Neural Machine Translation, AAAI 2018",
    form="words and characters",
)
class AttentionViaAttention(AttentionBlock):
    """Attention-via-attention: word-level attention first, its context then guides character-level attention.

    ::

        c_w = sum_l a_l f_l^(w),   a = softmax_l score_w(q, f_l^(w))                 word level
        c_c = sum_l b_l f_l^(c),   b = softmax_l score_c([q; c_w], f_l^(c))          character level
        c   = [c_w; c_c]

    The higher level (words) is attended first and steers the lower one (characters):
    multi-level attention learned top-down, the reverse of the hierarchical (HAN) block.
    Both levels are :class:`~framework.attention.Attention` blocks without projections
    (``words``, ``characters``); Zhao & Zhang use the additive score (the default).

    Args:
        dim: query features Dq.
        word_dim: features Dw of the word-level features (default ``dim``).
        char_dim: features Dc of the character-level features (default ``word_dim``).
        score: the score function of both levels (a name of ``Attention``'s scores).
        score_kwargs: its options (``hidden``, ``activation`` ...).

    Shapes:
        query (B, Dq) or (B, M, Dq); words (B, Nw, Dw); chars (B, Nc, Dc); ``word_mask``
        (B, Nw) and ``char_mask`` (B, Nc) boolean, True = may attend. Output (B, Dw + Dc)
        or (B, M, Dw + Dc). With ``need_weights=True`` an ``AttentionOutput`` whose
        weights are the captured ones.

    Captured weights: ``(word weights (B, [M,] Nw), character weights (B, [M,] Nc))`` per call.
    """

    def __init__(
        self,
        dim: PositiveInt,
        word_dim: Optional[PositiveInt] = None,
        char_dim: Optional[PositiveInt] = None,
        score: ScoreName = "additive",
        score_kwargs: Optional[dict[str, Any]] = None,
    ) -> None:
        super().__init__()
        self.dim, self.word_dim = dim, word_dim or dim
        self.char_dim = char_dim or self.word_dim
        self.words = Attention(dim, self.word_dim, score=score, project=False, score_kwargs=score_kwargs)
        self.characters = Attention(
            dim + self.word_dim, self.char_dim, score=score, project=False, score_kwargs=score_kwargs
        )

    def forward(
        self,
        query: Tensor,
        words: Tensor,
        chars: Tensor,
        word_mask: Optional[Tensor] = None,
        char_mask: Optional[Tensor] = None,
        *,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        self.expect("query", query, "B D" if query.dim() == 2 else "B M D", D=self.dim)
        batch = query.shape[0]
        self.expect("words", words, "B N D", B=batch, D=self.word_dim)
        self.expect("chars", chars, "B N D", B=batch, D=self.char_dim)
        if word_mask is not None:
            self.expect("word_mask", word_mask, "B N", B=batch, N=words.shape[1])
        if char_mask is not None:
            self.expect("char_mask", char_mask, "B N", B=batch, N=chars.shape[1])
        want = need_weights or self.wants_weights()
        word_level = self.words(query, words, key_padding_mask=word_mask, need_weights=want)
        c_w = word_level.output if want else word_level
        char_level = self.characters(torch.cat([query, c_w], -1), chars, key_padding_mask=char_mask, need_weights=want)
        c_c = char_level.output if want else char_level
        output = torch.cat([c_w, c_c], -1)
        weights = (word_level.weights[:, 0], char_level.weights[:, 0]) if want else None
        return self.finish(output, weights, need_weights)
