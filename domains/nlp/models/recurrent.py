"""A bidirectional recurrent encoder over padded sequences."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from framework.errors import ConfigError
from framework.layers import run_packed

#: A recurrent cell's name (``model.cell``).
Cell = Literal["gru", "lstm"]
CELLS: dict[str, type[nn.RNNBase]] = {"gru": nn.GRU, "lstm": nn.LSTM}


def recurrent_cell(cell: str, key: str = "model.cell") -> type[nn.RNNBase]:
    """``nn.GRU`` or ``nn.LSTM`` by name."""
    if cell not in CELLS:
        raise ConfigError(f"{key} must be one of {', '.join(CELLS)}, got {cell!r}")
    return CELLS[cell]


class RecurrentEncoder(nn.Module):
    """Bidirectional GRU or LSTM that reads only the real tokens of each sequence (packed).

    Args:
        input_dim: features E of the inputs.
        dim: output features D; each direction has D / 2.
        cell: ``gru`` or ``lstm``.
        layers: stacked layers.

    Shapes: x (B, N, E), mask (B, N) bool (True = token, right padding) ->
    states (B, N, D) (zero at padding) and final (B, D) = [forward state at the last
    token; backward state at the first token] of the top layer. A sequence without tokens
    is read as one step of its first (padding) input.
    """

    def __init__(self, input_dim: int, dim: int, cell: str = "gru", layers: int = 1) -> None:
        super().__init__()
        if dim % 2:
            raise ConfigError(f"model.dim must be even (two directions of dim / 2), got {dim}")
        self.rnn = recurrent_cell(cell)(input_dim, dim // 2, num_layers=layers, batch_first=True, bidirectional=True)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        states, hidden = run_packed(self.rnn, x, mask.sum(-1))
        return states, torch.cat([hidden[-2], hidden[-1]], dim=-1)
