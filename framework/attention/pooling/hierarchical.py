"""Hierarchical attention network (Yang et al., NAACL 2016): words -> sentences -> document."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from torch import Tensor, nn

from ..base import AttentionBlock
from ..registry import register
from .pooling import AttentionPooling

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "hierarchical",
    kind="pooling",
    category="feature-related / levels: hierarchical",
    paper="Yang, Yang, Dyer, He, Smola & Hovy, Hierarchical Attention Networks for Document Classification, NAACL 2016",
    form="sentences",
)
class HierarchicalAttention(AttentionBlock):
    """Hierarchical attention: attention pooling over the words of each sentence, then over sentences.

    ::

        s_i = sum_t a_it h_it,   a_it = softmax_t(u_w^T tanh(W_w h_it + b_w))      (words)
        s_i <- sentence_encoder(s, sentence mask)_i                               (optional)
        d   = sum_i b_i s_i,     b_i  = softmax_i(u_s^T tanh(W_s s_i + b_s))       (sentences)

    Both levels are :class:`AttentionPooling` blocks (``words``, shared by all sentences,
    and ``sentences``), so a capture can watch either level under its own name.

    Args:
        dim: word features D (the sentence vectors have D features too).
        hidden: d_w of both poolings (default ``dim``).
        sentence_encoder: a module called as ``sentence_encoder(s, sentence_mask)``,
            (B, S, D) and (B, S) boolean or None -> (B, S, D), run on the sentence vectors,
            e.g. a bidirectional GRU that skips padded sentences; none by default.

    Shapes:
        x (B, S, W, D); ``mask`` (B, S, W) boolean, True = a real word (a sentence is valid
        if any of its words is). Output (B, D); a document without words gives zeros.

    Captured weights: the block records ``(word weights (B, S, W), sentence weights (B, S))``
    per call; ``words`` records (B * S, 1, W) and ``sentences`` (B, 1, S).
    """

    def __init__(
        self, dim: PositiveInt, hidden: Optional[PositiveInt] = None, sentence_encoder: Optional[nn.Module] = None
    ) -> None:
        super().__init__()
        self.dim = dim
        self.words = AttentionPooling(dim, hidden)
        self.sentence_encoder = sentence_encoder
        self.sentences = AttentionPooling(dim, hidden)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        self.expect("x", x, "B S W D", D=self.dim)
        b, s, w, d = x.shape
        if mask is not None:
            self.expect("mask", mask, "B S W", B=b, S=s, W=w)
        want = self.wants_weights()
        word_mask = None if mask is None else mask.reshape(b * s, w)
        words = self.words(x.reshape(b * s, w, d), word_mask, need_weights=want)
        sentences = (words.output if want else words).reshape(b, s, d)
        sentence_mask = None if mask is None else mask.any(-1)
        if self.sentence_encoder is not None:
            sentences = self.sentence_encoder(sentences, sentence_mask)
            self.expect("sentence_encoder output", sentences, "B S D", B=b, S=s, D=d)
        document = self.sentences(sentences, sentence_mask, need_weights=want)
        if not want:
            return document
        self.record((words.weights.reshape(b, s, w), document.weights[:, 0]))
        return document.output
