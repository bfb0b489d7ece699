"""A set classifier in the Set Transformer's shape: a permutation-equivariant encoder, a
permutation-invariant pooling, an MLP (Lee et al., ICML 2019)."""

from __future__ import annotations

from typing import Optional

from torch import Tensor, nn

from framework.attention import PoolingBlock, SequenceBlock, build
from framework.attention.spec import NONE
from framework.data.sizes import require_sizes
from framework.values import PositiveInt


class RowwiseFeedForward(nn.Module):
    """rFF, the encoder layer without attention: x + W_2 relu(W_1 x + b_1) + b_2 on every element alone."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        return x + self.net(x)


class SetClassifier(nn.Module):
    """Tokens of a set -> class: embeddings (no positions), an encoder, a pooling, an MLP.

    ::

        x_i   = E t_i                                   (order carries no meaning)
        x     = encoder_depth( ... encoder_1(x, mask))  (``sab``, ``isab``, ``mhsa`` ...; ``none``: rFF)
        s     = pool(x, mask)                           (``pma``, ``pooling`` ...; ``none``: the masked mean)
        logits = W_2 relu(W_1 s + b_1) + b_2

    The Set Transformer is ``attention: isab`` (or ``sab``) with ``pooling: pma``; the paper's
    baseline ("rFF + pooling", DeepSets' shape) is ``attention: none`` with ``pooling: none``.

    Args:
        vocab_size: tokens, padding included (unset: the data module's ``vocab_size``).
        num_classes: classes (unset: the data module's ``num_classes``).
        dim: element features.
        depth: encoder layers.
        attention: the sequence block of every encoder layer (called with ``dim`` and ``num_heads``).
        pooling: the pooling block (called with ``dim``), or ``none`` for the masked mean.
        num_heads: heads of the encoder blocks.

    Shapes: tokens (B, N) long, mask (B, N) bool (True = an element) -> logits (B, num_classes).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        num_classes: Optional[PositiveInt] = None,
        dim: PositiveInt = 64,
        depth: PositiveInt = 2,
        attention: SequenceBlock = "isab",
        pooling: PoolingBlock = "pma",
        num_heads: PositiveInt = 4,
    ) -> None:
        super().__init__()
        require_sizes("model", vocab_size=vocab_size, num_classes=num_classes)
        self.vocab_size, self.num_classes = vocab_size, num_classes
        self.tokens = nn.Embedding(vocab_size, dim)
        self.encoder = nn.ModuleList(
            RowwiseFeedForward(dim)
            if attention == NONE
            else build(attention, dim, num_heads=num_heads, kind="sequence")
            for _ in range(depth)
        )
        self.pool = build(pooling, dim, kind="pooling")
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, num_classes))

    def forward(self, tokens: Tensor, mask: Tensor) -> Tensor:
        x = self.tokens(tokens)
        for layer in self.encoder:
            x = layer(x, mask)
        return self.head(self.pool(x, mask))
