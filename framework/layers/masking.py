"""Padding-aware reductions shared by the sequence domains (text, audio frames, histories).

Each one is finite, with the right gradient, when nothing is real: a batch, a sequence or a row
whose every position is masked or padded gives a zero mean (no position contributes, so no
gradient reaches any), where ``Tensor.mean`` and the losses' ``reduction="mean"`` give NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of x (..., N, D) over the N positions where mask (..., N) is True; zeros if none."""
    weights = mask.to(x.dtype).unsqueeze(-1)
    return (x * weights).sum(-2) / weights.sum(-2).clamp(min=1)


def mean_over(values: Tensor, mask: Optional[Tensor] = None) -> Tensor:
    """The mean of ``values`` (any shape) over the entries where ``mask`` (the same shape, bool)
    is True, all of them without a mask; 0, with a zero gradient, when there is none (what
    the per-position losses of a batch without real positions average to)."""
    if mask is None:
        return values.sum() / max(values.numel(), 1)
    return values.masked_fill(~mask, 0).sum() / mask.sum().clamp(min=1)


def counted_mean(loss: Callable[..., Tensor], input: Tensor, target: Tensor, ignore_index: int, **options) -> Tensor:
    """``loss(input, target, ignore_index=ignore_index, **options)`` (``F.cross_entropy``,
    ``F.nll_loss``) averaged over the targets that are not ``ignore_index``, as its
    ``reduction="mean"`` does; 0, with a zero gradient, when every target is ignored (a batch of
    padding only), where the mean reduction gives NaN. Shapes as the loss takes them."""
    total = loss(input, target, ignore_index=ignore_index, reduction="sum", **options)
    return total / (target != ignore_index).sum().clamp(min=1)


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
