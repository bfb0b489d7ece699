"""A token-sequence classifier with a pluggable sequence attention block."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from framework.attention import SequenceBlock
from framework.data.sizes import require_sizes
from framework.layers import AttentionEncoder
from framework.values import Fraction, NonNegativeInt, PositiveInt


class SequenceClassifier(nn.Module):
    """Tokens -> class: token and position embeddings, an :class:`AttentionEncoder`, and a
    linear read-out of the last real token.

    Args:
        vocab_size, num_classes: sizes of the input vocabulary and of the output.
        dim, depth: width and number of encoder layers (0: the embeddings, normalised, are read out).
        attention: the sequence block of every layer (``mhsa``, ``local``, ``none`` ...).
        max_len: longest sequence.
        dropout: in the encoder layers.

    Shapes: tokens (B, N) long, mask (B, N) bool (True = token) -> logits (B, num_classes).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        num_classes: Optional[PositiveInt] = None,
        dim: PositiveInt = 64,
        depth: NonNegativeInt = 2,
        attention: SequenceBlock = "mhsa",
        max_len: PositiveInt = 64,
        dropout: Fraction = 0.0,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size, num_classes=num_classes)
        super().__init__()
        self.vocab_size, self.num_classes = vocab_size, num_classes
        self.tokens = nn.Embedding(vocab_size, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.encoder = AttentionEncoder(dim, depth, attention, dropout=dropout)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, tokens: Tensor, mask: Tensor) -> Tensor:
        x = self.tokens(tokens) + self.positions.weight[: tokens.shape[1]]
        x = self.encoder(x, mask)
        last = mask.sum(1) - 1
        return self.head(x[torch.arange(len(x)), last])
