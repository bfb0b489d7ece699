"""The hierarchical attention network (Yang et al., NAACL 2016): words -> sentences -> document."""

from __future__ import annotations

from typing import Optional, Union

import torch
from torch import Tensor, nn

from framework.attention import PoolingBlock, available, build, capture
from framework.attention.spec import NONE
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.layers import masked_mean
from framework.values import Fraction, PositiveInt

from ..data.tokenization import PAD
from .common import ClassifierOutput, uniform_weights
from .recurrent import Cell, RecurrentEncoder


class SentenceEncoder(nn.Module):
    """The sentence-level bidirectional GRU/LSTM that the ``hierarchical`` block runs between
    its two poolings: sentences (B, S, D) and mask (B, S) boolean (True = a sentence; None =
    all) -> (B, S, D); padded sentences are not read."""

    def __init__(self, dim: int, cell: Cell = "gru") -> None:
        super().__init__()
        self.encoder = RecurrentEncoder(dim, dim, cell)

    def forward(self, sentences: Tensor, mask: Union[Tensor, None] = None) -> Tensor:
        if mask is None:
            mask = sentences.new_ones(sentences.shape[:2], dtype=torch.bool)
        return self.encoder(sentences, mask)[0]


class HierarchicalAttentionNetwork(nn.Module):
    """Word encoder, word attention, sentence encoder, sentence attention, linear head.

    ::

        h_it = BiGRU_words(E w_it)                     per sentence i, word t
        s_i  = sum_t a_it h_it                          word attention (context vector u_w)
        s_i <- BiGRU_sentences(s)_i
        d    = sum_i b_i s_i                            sentence attention (context vector u_s)
        logits = W d + b

    The two attention levels and the sentence encoder are the ``hierarchical`` block;
    ``attention: none`` replaces both poolings with means (the baseline).

    Args:
        vocab_size, num_classes: sizes of the vocabulary and of the output.
        embed_dim: E. dim: D of both encoders (two directions of D / 2). cell: ``gru`` or ``lstm``.
        attention: ``hierarchical`` or ``none``; attention_hidden: d_w of both poolings.
        dropout: on the embeddings and before the head.

    Shapes: tokens (B, S, W) long, mask (B, S, W) bool (True = word; the data module's
    ``sentences: true``) -> logits (B, K); with ``need_weights=True`` a
    :class:`ClassifierOutput` whose token weights (B, S, W) are word weight x sentence weight.
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        num_classes: Optional[PositiveInt] = None,
        embed_dim: PositiveInt = 100,
        dim: PositiveInt = 100,
        attention: PoolingBlock = "hierarchical",
        attention_hidden: PositiveInt = 100,
        cell: Cell = "gru",
        dropout: Fraction = 0.2,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size, num_classes=num_classes)
        super().__init__()
        if isinstance(attention, str) and attention in available("pooling") and attention != "hierarchical":
            raise ConfigError(
                f"model.attention: the hierarchical attention network takes 'hierarchical' (or a block "
                f"with its signature) or 'none', got {attention!r}"
            )
        self.vocab_size = vocab_size
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.words = RecurrentEncoder(embed_dim, dim, cell)
        self.sentence_encoder = SentenceEncoder(dim, cell)
        self.attention = (
            build(
                attention,
                dim,
                hidden=attention_hidden,
                sentence_encoder=self.sentence_encoder,
                kind="pooling",
                forms=("sentences",),
            )
            if attention != NONE
            else None
        )
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, tokens: Tensor, mask: Tensor, need_weights: bool = False) -> Union[Tensor, ClassifierOutput]:
        if tokens.dim() != 3:
            raise ValueError(
                f"HierarchicalAttentionNetwork: tokens must have shape (B, S, W) (sentences of words; "
                f"set data.sentences=true), got {tuple(tokens.shape)}"
            )
        b, s, w = tokens.shape
        words = self.words(self.dropout(self.embed(tokens.reshape(b * s, w))), mask.reshape(b * s, w))[0]
        words = words.reshape(b, s, w, -1)
        if self.attention is None:
            sentences = self.sentence_encoder(masked_mean(words, mask), mask.any(-1))
            document = masked_mean(sentences, mask.any(-1))
            weights = uniform_weights(mask, words.dtype) * uniform_weights(mask.any(-1), words.dtype).unsqueeze(-1)
        elif need_weights:
            with capture(self, "attention") as maps:
                document = self.attention(words, mask)
            word_weights, sentence_weights = maps["attention"][0].weights
            weights = word_weights * sentence_weights.unsqueeze(-1)
        else:
            document = self.attention(words, mask)
        logits = self.head(self.dropout(document))
        return ClassifierOutput(logits, weights) if need_weights else logits
