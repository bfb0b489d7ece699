"""A causal convolution whose step features are the stored patterns of a modern Hopfield layer
(Ramsauer et al., ICLR 2021): the last step retrieves what the sequence stored, for look-up tasks."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from framework.attention import AttentionOutput, MemoryBlock, build
from framework.values import PositiveFloat, PositiveInt


class HopfieldReader(nn.Module):
    """Step features stored in a Hopfield memory, retrieved by the last step's; a linear answer.

    ::

        s_t    = W_2 relu(conv(x_{t-c+1} .. x_t)) + b_2    a causal convolution over the last c steps
        z      = Hopfield(s_T; s_1 .. s_T)                  (``hopfield``: the last step's features are
                                                              the state pattern, all steps' the stored ones)
        logits = W_y [z; s_T] + b_y                          reshaped to (answer_length, output_size)

    With c = ``context`` covering two items of associative recall, the features of the step
    that ends an item hold that item and the one before it, so W_K can match the query against
    the earlier item while W_V reads the later one. ``attention: none`` answers from s_T alone:
    the query and the end of the sequence before it, which holds the answer only when the asked
    item is the second last (associative recall's no-memory baseline).

    Args:
        input_size: features of an input step.
        output_size: features of an answer step (bits).
        answer_length: answer steps.
        hidden: features of a step, and the width of the Hopfield layer.
        context: c, the steps a feature sees.
        num_heads: the Hopfield layer's heads.
        steps: its updates S.
        beta: its inverse temperature (default 1 / sqrt(d_head)).
        attention: the memory block (``hopfield``, a spec taking its arguments, or ``none``).

    Shapes: inputs (B, T, input_size), mask (B, T) bool (the real steps, a prefix) -> logits
    (B, answer_length, output_size); with ``need_weights=True`` also the retrieval weights
    (B, heads, 1, T) (None without attention).
    """

    def __init__(
        self,
        input_size: PositiveInt,
        output_size: PositiveInt,
        answer_length: PositiveInt,
        hidden: PositiveInt = 64,
        context: PositiveInt = 8,
        num_heads: PositiveInt = 1,
        steps: PositiveInt = 1,
        beta: Optional[PositiveFloat] = None,
        attention: MemoryBlock = "hopfield",
    ) -> None:
        super().__init__()
        self.input_size, self.output_size, self.answer_length = input_size, output_size, answer_length
        self.encoder = nn.Sequential(
            nn.ConstantPad1d((context - 1, 0), 0.0),
            nn.Conv1d(input_size, hidden, context),
            nn.ReLU(),
            nn.Conv1d(hidden, hidden, 1),
        )
        self.memory = build(attention, hidden, num_heads=num_heads, steps=steps, beta=beta, kind="memory")
        self.output = nn.Linear(2 * hidden, answer_length * output_size)

    def forward(
        self, inputs: Tensor, mask: Tensor, need_weights: bool = False
    ) -> Tensor | tuple[Tensor, Optional[Tensor]]:
        states = self.encoder((inputs * mask.unsqueeze(-1)).transpose(1, 2)).transpose(1, 2)  # (B, T, hidden)
        query = states[torch.arange(len(states), device=states.device), mask.sum(1) - 1]  # the last real step
        read = self.memory(query.unsqueeze(1), states, mask, need_weights=need_weights)
        retrieved, weights = (read.output, read.weights) if isinstance(read, AttentionOutput) else (read, None)
        logits = self.output(torch.cat([retrieved.squeeze(1), query], -1)).view(
            -1, self.answer_length, self.output_size
        )
        return (logits, weights) if need_weights else logits
