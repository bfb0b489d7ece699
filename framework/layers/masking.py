"""Padding-aware reductions shared by the sequence domains (text, audio frames, histories)."""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of x (..., N, D) over the N positions where mask (..., N) is True; zeros if none."""
    weights = mask.to(x.dtype).unsqueeze(-1)
    return (x * weights).sum(-2) / weights.sum(-2).clamp(min=1)


def run_packed(rnn: nn.RNNBase, x: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """Run a ``batch_first`` GRU/LSTM/RNN over the first ``lengths[b]`` steps of each row only
    (right padding is packed away, so it never enters the recurrence).

    Shapes: x (B, N, E), lengths (B,) -> states (B, N, H * directions), zero at padding, and
    the final hidden state (layers * directions, B, H) (``h`` of an LSTM). A row of length 0
    is read as one step of its first input.
    """
    packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
    states, hidden = rnn(packed)
    states, _ = pad_packed_sequence(states, batch_first=True, total_length=x.shape[1])
    return states, hidden[0] if isinstance(hidden, tuple) else hidden
