"""Neural Turing machine (Graves, Wayne & Danihelka, 2014): an LSTM controller with a memory matrix
that it reads and writes through the core's ``ntm`` heads, one time step at a time."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from framework.attention import MemoryBlock, build
from framework.attention.spec import NoAttention
from framework.values import NonNegativeInt, PositiveInt


class NTM(nn.Module):
    """NTM for sequence tasks with a binary answer after the input (copy, associative recall).

    At every step t the controller reads the input and the previous reads, the heads write
    and read the memory, and the output layer sees the controller's state and the reads::

        h_t, c_t  = LSTMCell([x_t; r_{t-1}], (h_{t-1}, c_{t-1}))
        r_t, M_t, w_t = heads(h_t, M_{t-1}, w_{t-1})       (``ntm``: write, then read)
        y_t       = W_y [h_t; r_t] + b_y                    (logits of the output bits)

    The input of each example is followed by ``answer_length`` steps of zeros, during which
    the answer is read out. M_0 is a learned (N, M) matrix, w_0 a learned softmax per head and
    r_0 = 0. ``attention: none`` drops the memory: the LSTM alone, the paper's baseline.

    Args:
        input_size: features of an input step (bits + delimiter channels).
        output_size: bits of an answer step.
        answer_length: answer steps.
        hidden: controller units (100 in the paper).
        memory_slots: N (128 in the paper).
        memory_width: M (20 in the paper).
        read_heads, write_heads: the heads (1 each in the paper).
        max_shift: largest offset of the heads' shift.
        attention: the memory heads (``ntm``, a spec taking their arguments, or ``none``).

    Shapes: inputs (B, T, input_size), mask (B, T) bool (the real steps, a prefix) -> logits
    (B, answer_length, output_size); with ``need_weights=True`` also the weightings
    (B, W + R, T + answer_length, N) of every head at every step (None without memory).
    """

    def __init__(
        self,
        input_size: PositiveInt,
        output_size: PositiveInt,
        answer_length: PositiveInt,
        hidden: PositiveInt = 100,
        memory_slots: PositiveInt = 128,
        memory_width: PositiveInt = 20,
        read_heads: PositiveInt = 1,
        write_heads: NonNegativeInt = 1,
        max_shift: NonNegativeInt = 1,
        attention: MemoryBlock = "ntm",
    ) -> None:
        super().__init__()
        self.input_size, self.answer_length = input_size, answer_length
        self.heads = build(
            attention,
            hidden,
            memory_width=memory_width,
            read_heads=read_heads,
            write_heads=write_heads,
            max_shift=max_shift,
            kind="memory",
        )
        self.memory = not isinstance(self.heads, NoAttention)
        reads = read_heads * memory_width if self.memory else 0
        self.read_heads, self.memory_width = read_heads, memory_width
        self.controller = nn.LSTMCell(input_size + reads, hidden)
        self.output = nn.Linear(hidden + reads, output_size)
        if self.memory:
            self.initial_memory = nn.Parameter(torch.empty(memory_slots, memory_width).uniform_(-0.1, 0.1))
            self.initial_weights = nn.Parameter(torch.zeros(read_heads + write_heads, memory_slots))

    def forward(
        self, inputs: Tensor, mask: Tensor, need_weights: bool = False
    ) -> Tensor | tuple[Tensor, Optional[Tensor]]:
        batch, steps, _ = inputs.shape
        x = torch.cat([inputs * mask.unsqueeze(-1), inputs.new_zeros(batch, self.answer_length, inputs.shape[-1])], 1)
        h = c = inputs.new_zeros(batch, self.controller.hidden_size)
        if self.memory:
            memory = self.initial_memory.expand(batch, -1, -1)
            weights = self.initial_weights.softmax(-1).expand(batch, -1, -1)
            reads = inputs.new_zeros(batch, self.read_heads * self.memory_width)
        outputs, kept = [], []
        for t in range(x.shape[1]):
            if self.memory:
                h, c = self.controller(torch.cat([x[:, t], reads], -1), (h, c))
                reads, memory, weights = self.heads(h, memory, weights)
                reads = reads.flatten(1)
                outputs.append(self.output(torch.cat([h, reads], -1)))
                kept.append(weights)
            else:
                h, c = self.controller(x[:, t], (h, c))
                outputs.append(self.output(h))
        # the answer of example b is read at the answer_length steps after its last real step
        answer = mask.sum(1, keepdim=True) + torch.arange(self.answer_length, device=inputs.device)
        logits = torch.stack(outputs, 1)[torch.arange(batch, device=inputs.device).unsqueeze(1), answer]
        if not need_weights:
            return logits
        return logits, torch.stack(kept, 2) if kept else None
