"""A Transformer encoder classifier with an attention-pooling or a [CLS] read-out."""

from __future__ import annotations

import math
from typing import Literal, Optional, Union

import torch
from torch import Tensor, nn

from framework.attention import PoolingBlock, SequenceBlock, build, capture
from framework.attention.spec import NONE
from framework.data.sizes import require_sizes
from framework.layers import AttentionEncoder, PositionalEncoding, masked_mean
from framework.values import Fraction, NonNegativeInt, PositiveFloat, PositiveInt

from .common import ClassifierOutput, query_key_weights, scaled_embedding, uniform_weights

#: The classifier's read-outs (``model.readout``).
Readout = Literal["pooling", "cls"]


class TransformerClassifier(nn.Module):
    """Token embeddings x sqrt(D) plus sinusoidal positions, ``depth`` encoder layers
    (:class:`framework.layers.AttentionEncoder`, the sequence block ``attention`` in each),
    a read-out and a linear head.

    Read-outs: ``pooling``, the pooling block ``pooling`` over the encoded tokens (the
    self-attentive ``pooling`` by default; ``none`` gives their mean), or ``cls``, the
    encoded state of a learned [CLS] vector put before the tokens (Devlin et al., 2019).

    Args:
        vocab_size, num_classes: sizes of the vocabulary and of the output.
        dim, depth, mlp_ratio: width, layers (0: none) and MLP width ratio of the encoder.
        attention: the encoder's sequence block (``mhsa``, ``local``, ``none`` ...).
        readout: ``pooling`` or ``cls``; pooling: the block of the ``pooling`` read-out.
        max_len: longest input. dropout: in the encoder, after the positions and before the head.

    Shapes: tokens (B, N) long, mask (B, N) bool -> logits (B, K); with
    ``need_weights=True`` a :class:`ClassifierOutput` whose token weights (B, N) are the
    pooling weights, or the [CLS] row of the last layer's attention (heads averaged, the
    [CLS] column left out and the rest renormalised).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        num_classes: Optional[PositiveInt] = None,
        dim: PositiveInt = 128,
        depth: NonNegativeInt = 2,
        attention: SequenceBlock = "mhsa",
        readout: Readout = "pooling",
        pooling: PoolingBlock = "pooling",
        mlp_ratio: PositiveFloat = 2.0,
        max_len: PositiveInt = 128,
        dropout: Fraction = 0.1,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size, num_classes=num_classes)
        super().__init__()
        self.vocab_size, self.readout, self.scale = vocab_size, readout, math.sqrt(dim)
        self.embed = scaled_embedding(vocab_size, dim)
        self.positions = PositionalEncoding(dim, max_len + 1, dropout=dropout)
        self.encoder = AttentionEncoder(dim, depth, attention, mlp_ratio, dropout)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02) if readout == "cls" else None
        self.pooling = build(pooling, dim, kind="pooling") if readout == "pooling" and pooling != NONE else None
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(dim, num_classes)

    def no_weight_decay(self) -> set[str]:
        """The [CLS] embedding is not decayed (framework.optim)."""
        return {"cls"}

    def forward(self, tokens: Tensor, mask: Tensor, need_weights: bool = False) -> Union[Tensor, ClassifierOutput]:
        x = self.positions(self.embed(tokens) * self.scale)
        if self.cls is None:
            return self._pooled(self.encoder(x, mask), mask, need_weights)
        x = torch.cat([self.cls.expand(len(x), -1, -1), x], dim=1)
        mask = torch.cat([mask.new_ones(len(x), 1), mask], dim=1)
        if not need_weights:
            return self.head(self.dropout(self.encoder(x, mask)[:, 0]))
        with capture(self.encoder.layers[-1]) as maps:
            logits = self.head(self.dropout(self.encoder(x, mask)[:, 0]))
        records = next(iter(maps.values()), None)  # none when the block is `none`
        if not records:
            return ClassifierOutput(logits, uniform_weights(mask[:, 1:], logits.dtype))
        weights = query_key_weights(records[0].weights)[:, 0, 1:]  # what [CLS] gives the tokens, without itself
        return ClassifierOutput(logits, weights / weights.sum(-1, keepdim=True).clamp(min=1e-12))

    def _pooled(self, states: Tensor, mask: Tensor, need_weights: bool) -> Union[Tensor, ClassifierOutput]:
        if self.pooling is None:
            logits = self.head(self.dropout(masked_mean(states, mask)))
            return ClassifierOutput(logits, uniform_weights(mask, logits.dtype)) if need_weights else logits
        if not need_weights:
            return self.head(self.dropout(self.pooling(states, mask)))
        summary, rows = self.pooling(states, mask, need_weights=True)[:2]
        logits = self.head(self.dropout(summary))
        return ClassifierOutput(logits, rows.mean(1), rows)
