"""Pointer network (Vinyals, Fortunato & Jaitly, NeurIPS 2015): the decoder's attention over the
input positions is its output."""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch
from torch import Tensor, nn

from framework.attention import create
from framework.attention.cross.score import ScoreName
from framework.values import PositiveInt

from ..data.sorting import IGNORE
from .recurrent import RecurrentEncoder


class PointerOutput(NamedTuple):
    """log p (B, M, N) of each output step over the input positions, and p (B, M, N)."""

    log_probs: Tensor
    weights: Tensor


class PointerNetwork(nn.Module):
    """A pointer network over lists of numbers.

    ::

        x_j = W_x [value_j] + b_x                        embedded inputs (B, N, E)
        e_j = BiLSTM(x)_j                                 encoder states (B, N, D)
        d_i = LSTM(x_{y_{i-1}}, d_{i-1}),  d_0 = [forward last; backward first] of the encoder,
              x_{y_0} = a learned start vector
        log p(y_i = j) = pointer(d_i, e)_j                the ``pointer`` block: softmax_j of
                                                          score(d_i, e_j) over the allowed j

    The decoder reads the input it pointed at last (teacher forcing: the target's), so to sort,
    step i must find the smallest number above the one it has just read. With
    ``exclude_chosen`` the positions already chosen are not allowed again: the output is then
    always a permutation, and sorting collapses to "the smallest number left", which a
    score falling with the value alone solves (the paper does not constrain its outputs).

    Args:
        dim: D, the encoder states and the decoder state (two directions of D / 2 in the encoder).
        embed_dim: E.
        score: the pointer's score function (``additive`` as in the paper, ``general`` ...).
        exclude_chosen: forbid positions already chosen (off by default, as in the paper).

    Shapes: values (B, N) float, mask (B, N) bool, target (B, N) long positions (``IGNORE``
    beyond the length; teacher forcing) -> log p (B, N, N), or a :class:`PointerOutput`
    with ``need_weights=True``. :meth:`point` decodes greedily: (B, N) positions.
    """

    def __init__(
        self,
        dim: PositiveInt = 128,
        embed_dim: PositiveInt = 32,
        score: ScoreName = "additive",
        exclude_chosen: bool = False,
    ) -> None:
        super().__init__()
        self.embed = nn.Linear(1, embed_dim)
        self.encoder = RecurrentEncoder(embed_dim, dim, cell="lstm")
        self.start_input = nn.Parameter(torch.zeros(embed_dim))
        self.decoder = nn.LSTM(embed_dim, dim, batch_first=True)
        self.pointer = create("pointer", dim, dim, score=score)
        self.exclude_chosen = exclude_chosen

    def encode(self, values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor]]:
        """Embedded inputs (B, N, E), encoder states (B, N, D) and the decoder's first state."""
        inputs = self.embed(values.unsqueeze(-1))
        states, final = self.encoder(inputs, mask)
        hidden = final.unsqueeze(0).contiguous()
        return inputs, states, (hidden, torch.zeros_like(hidden))

    def _allowed(self, chosen: Tensor, mask: Tensor) -> Optional[Tensor]:
        """(B, M, N) positions step i may point at: valid, and (``exclude_chosen``) not chosen before."""
        return ~chosen & mask.unsqueeze(1) if self.exclude_chosen else None

    def forward(
        self, values: Tensor, mask: Tensor, target: Tensor, need_weights: bool = False
    ) -> Tensor | PointerOutput:
        if values.shape != mask.shape or target.shape != mask.shape:
            raise ValueError(
                f"PointerNetwork: values, mask and target must have one shape (B, N), got "
                f"{tuple(values.shape)}, {tuple(mask.shape)} and {tuple(target.shape)}"
            )
        inputs, states, hx = self.encode(values, mask)
        pointed = target.clamp(min=0)
        previous = inputs.gather(1, pointed.unsqueeze(-1).expand(-1, -1, inputs.shape[-1]))[:, :-1]
        start = self.start_input.expand(len(values), 1, -1)
        decoded, _ = self.decoder(torch.cat([start, previous], dim=1), hx)  # (B, N, D): d_1 .. d_N
        chosen = torch.nn.functional.one_hot(pointed, mask.shape[1]).bool() & (target >= 0).unsqueeze(-1)
        chosen = (chosen.cumsum(1) - chosen.long()) > 0  # positions chosen before step i
        result = self.pointer(
            decoded, states, key_padding_mask=mask, attn_mask=self._allowed(chosen, mask), need_weights=need_weights
        )
        return PointerOutput(result.output, result.weights) if need_weights else result

    @torch.no_grad()
    def point(self, values: Tensor, mask: Tensor) -> Tensor:
        """Greedy decoding: the most probable position at each of N steps, (B, N) long
        (``IGNORE`` beyond each example's length)."""
        inputs, states, hx = self.encode(values, mask)
        step_input = self.start_input.expand(len(values), 1, -1)
        chosen = torch.zeros_like(mask)
        positions = []
        for _ in range(mask.shape[1]):
            decoded, hx = self.decoder(step_input, hx)
            log_p = self.pointer(
                decoded, states, key_padding_mask=mask, attn_mask=self._allowed(chosen.unsqueeze(1), mask)
            )
            position = log_p[:, 0].argmax(-1)
            positions.append(position)
            chosen = chosen | torch.nn.functional.one_hot(position, mask.shape[1]).bool()
            step_input = inputs.gather(1, position.view(-1, 1, 1).expand(-1, 1, inputs.shape[-1]))
        lengths = mask.sum(-1, keepdim=True)
        steps = torch.arange(mask.shape[1], device=mask.device)
        return torch.stack(positions, dim=1).masked_fill(steps >= lengths, IGNORE)
