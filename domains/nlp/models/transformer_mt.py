"""The Transformer encoder-decoder (Vaswani et al., NeurIPS 2017) over the catalogue's blocks."""

from __future__ import annotations

import math
from typing import Optional, Union

import torch
from torch import Tensor, nn

from framework.attention import CrossBlock, SequenceBlock, build, weights_over_keys
from framework.attention.spec import NONE
from framework.data.sizes import require_sizes
from framework.decoding import State
from framework.layers import AttentionEncoder, PositionalEncoding
from framework.values import Fraction, PositiveFloat, PositiveInt

from .common import query_key_weights, scaled_embedding
from .seq2seq import Seq2SeqOutput


class DecoderLayer(nn.Module):
    """Pre-norm decoder layer: causal self-attention, cross-attention to the source, MLP.

    ::

        x = x + self_attention(LN(x))            token i attends tokens j <= i
        x = x + cross_attention(LN(x), memory)   every token attends the source
        x = x + MLP(LN(x))

    ``self_attention`` is a sequence block built with ``causal=True`` (``mhsa``, ``local``);
    ``cross_attention`` a cross block with projections (``multi_head``, ``scaled_dot`` ...).

    Shapes: x (B, M, D), memory (B, N, D), memory_mask (B, N) bool -> (B, M, D); with
    ``need_weights=True`` also the cross-attention weights (B, M, N), heads averaged.
    """

    def __init__(
        self,
        dim: int,
        self_attention: SequenceBlock = "mhsa",
        cross_attention: CrossBlock = "multi_head",
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        causal = {} if self_attention == NONE else {"causal": True}
        self.self_attention = build(self_attention, dim, kind="sequence", **causal)
        self.cross_attention = build(cross_attention, dim, kind="cross")
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, dim))
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: Tensor, memory: Tensor, memory_mask: Tensor, need_weights: bool = False
    ) -> Union[Tensor, tuple[Tensor, Tensor]]:
        x = x + self.dropout(self.self_attention(self.norm1(x), None))
        cross = self.cross_attention(self.norm2(x), memory, key_padding_mask=memory_mask, need_weights=need_weights)
        x = x + self.dropout(cross[0] if need_weights else cross)
        x = x + self.dropout(self.mlp(self.norm3(x)))
        if not need_weights:
            return x
        return x, query_key_weights(weights_over_keys(self.cross_attention, cross[1], memory.shape[1]))


class TransformerSeq2Seq(nn.Module):
    """Encoder (:class:`framework.layers.AttentionEncoder`) and decoder (:class:`DecoderLayer`
    stack) over one shared token embedding x sqrt(D) plus sinusoidal positions; the output
    layer is tied to the embedding (Press & Wolf, 2017).

    Args:
        vocab_size: the joint source/target vocabulary.
        dim, depth, mlp_ratio: width, layers (encoder and decoder each) and MLP ratio.
        attention: the self-attention block of encoder and decoder (``mhsa``; causal in
            the decoder). cross_attention: the decoder's cross block (``multi_head``).
        max_len: longest source or target. dropout: in every layer and after the positions.

    Shapes: tokens (B, N), mask (B, N), target_in (B, M) -> logits (B, M, V); with
    ``need_weights=True`` a :class:`Seq2SeqOutput` whose alignment (B, M, N) is the last
    layer's cross-attention, heads averaged. Decoding steps recompute the decoder over
    the prefix (no key-value cache).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        dim: PositiveInt = 128,
        depth: PositiveInt = 2,
        attention: SequenceBlock = "mhsa",
        cross_attention: CrossBlock = "multi_head",
        mlp_ratio: PositiveFloat = 4.0,
        max_len: PositiveInt = 128,
        dropout: Fraction = 0.1,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size)
        super().__init__()
        self.vocab_size, self.scale = vocab_size, math.sqrt(dim)
        self.embed = scaled_embedding(vocab_size, dim)
        self.positions = PositionalEncoding(dim, max_len, dropout=dropout)
        self.encoder = AttentionEncoder(dim, depth, attention, mlp_ratio, dropout)
        self.decoder = nn.ModuleList(
            DecoderLayer(dim, attention, cross_attention, mlp_ratio, dropout) for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.output = nn.Linear(dim, vocab_size, bias=False)
        self.output.weight = self.embed.weight

    def _embed(self, tokens: Tensor) -> Tensor:
        return self.positions(self.embed(tokens) * self.scale)

    def start(self, tokens: Tensor, mask: Tensor) -> State:
        """Encode the source; the prefix of decoded tokens starts empty."""
        memory = self.encoder(self._embed(tokens), mask)
        return {"memory": memory, "mask": mask, "prefix": tokens.new_empty(len(tokens), 0)}

    def decode(self, state: State, inputs: Tensor, need_weights: bool = False) -> tuple[Tensor, Optional[Tensor]]:
        """Logits (B, M, V) for decoder inputs (B, M), and the alignment (B, M, N) when wanted."""
        x, weights = self._embed(inputs), None
        for index, layer in enumerate(self.decoder):
            last = need_weights and index == len(self.decoder) - 1
            x = layer(x, state["memory"], state["mask"], need_weights=last)
            if last:
                x, weights = x
        return self.output(self.norm(x)), weights

    def step(self, state: State, previous: Tensor) -> tuple[Tensor, State]:
        """Append ``previous`` (B,) to the prefix and return the logits (B, V) of the next token."""
        prefix = torch.cat([state["prefix"], previous.unsqueeze(1)], dim=1)
        logits, _ = self.decode(state, prefix)
        return logits[:, -1], dict(state, prefix=prefix)

    def forward(
        self, tokens: Tensor, mask: Tensor, target_in: Tensor, need_weights: bool = False
    ) -> Union[Tensor, Seq2SeqOutput]:
        logits, weights = self.decode(self.start(tokens, mask), target_in, need_weights)
        return Seq2SeqOutput(logits, weights) if need_weights else logits
