"""A Transformer-style encoder over any sequence block (NLP, audio, recommender)."""

from __future__ import annotations

from typing import Optional

from torch import Tensor, nn

from ..attention import SequenceBlock, available, build, info
from ..attention.spec import BlockArgumentsError, takes
from ..errors import ConfigError


def sequence_block(attention: SequenceBlock, dim: int, causal: bool = False) -> nn.Module:
    """The sequence block named by ``attention``; with ``causal`` it is built with ``causal=True``
    (token i attends tokens j <= i), which ``mhsa``, ``local`` and the score-based blocks take."""
    if not causal:
        return build(attention, dim, kind="sequence")
    try:
        return build(attention, dim, kind="sequence", causal=True)
    except (TypeError, BlockArgumentsError):
        fitting = [name for name in available("sequence") if takes(info(name).builder, "causal", "__init__")]
        raise ValueError(
            f"attention: {attention!r} cannot be causal (token i attends tokens j <= i), which this encoder needs; "
            f"the sequence blocks that can: {', '.join(fitting)}"
        ) from None


class EncoderLayer(nn.Module):
    """Pre-norm residual layer: x + block(LN(x), mask), then x + MLP(LN(x)).

    Shapes: x (B, N, D), mask (B, N) boolean (True = token) -> (B, N, D). With ``causal``
    token i attends tokens j <= i only (a decoder-only or SASRec-style encoder).
    """

    def __init__(
        self,
        dim: int,
        attention: SequenceBlock = "mhsa",
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attention = sequence_block(attention, dim, causal)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, dim))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        x = x + self.dropout(self.attention(self.norm1(x), mask))
        return x + self.dropout(self.mlp(self.norm2(x)))


class AttentionEncoder(nn.Module):
    """``depth`` encoder layers, each with its own block built from ``attention``, and a final norm."""

    def __init__(
        self,
        dim: int,
        depth: int = 2,
        attention: SequenceBlock = "mhsa",
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        if depth < 0:
            raise ConfigError(f"model.depth must be >= 0 encoder layers, got {depth}")
        self.layers = nn.ModuleList(EncoderLayer(dim, attention, mlp_ratio, dropout, causal) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)
