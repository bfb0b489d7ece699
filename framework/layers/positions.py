"""Positional encodings: where each token sits, added to its features."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class PositionalEncoding(nn.Module):
    """Adds the position of each token to its features: x_n + p_n.

    Sinusoidal (Vaswani et al., 2017): p_{n,2i} = sin(n / 10000^{2i/D}), p_{n,2i+1} = cos(...);
    or learned, one vector per position (as in BERT and SASRec).

    Args:
        dim: D.
        max_len: longest sequence (positions 0 .. max_len - 1).
        learned: learned positions instead of sinusoids.
        dropout: dropout after the sum.

    Shapes: x (B, N, D) -> (B, N, D); ``offset`` shifts the positions (decoding step by step).
    """

    def __init__(self, dim: int, max_len: int = 512, learned: bool = False, dropout: float = 0.0) -> None:
        super().__init__()
        self.max_len = max_len
        if learned:
            self.table = nn.Parameter(torch.randn(max_len, dim) * 0.02)
        else:
            position = torch.arange(max_len).unsqueeze(1)
            frequency = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
            table = torch.zeros(max_len, dim)
            table[:, 0::2] = torch.sin(position * frequency)
            table[:, 1::2] = torch.cos(position * frequency[: dim // 2])
            self.register_buffer("table", table, persistent=False)
        self.dropout = nn.Dropout(dropout)

    def no_weight_decay(self) -> set[str]:
        """A learned table is an embedding: weight decay leaves it alone (:mod:`framework.optim`)."""
        return {"table"}

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        end = offset + x.shape[-2]
        if end > self.max_len:
            raise ValueError(
                f"positional encoding: sequence reaches position {end} but max_len={self.max_len}; "
                "raise the model's max_len"
            )
        return self.dropout(x + self.table[offset:end].to(x.dtype))
