"""What the memory-network models share: the read block, its linear-start switch, the output."""

from __future__ import annotations

from typing import Literal, Optional

import torch
from torch import Tensor, nn

from framework.attention import AttentionOutput, MemoryBlock, build
from framework.values import PositiveInt


class MemoryReader(nn.Module):
    """Base of the question-answering memory networks: a story is read by a memory block.

    Subclasses embed story and question and call :meth:`attend`. The block comes from the
    registry (``attention: memory_read``; ``none`` answers from the question alone).

    The block's update matrices (MemN2N's H, KV-MemNN's R_k) start as the identity, so that
    every hop starts as u^{k+1} = u^k + o^k.

    Linear start (Sukhbaatar et al. 2015, §4.2) is a switch of the block that the
    ``LinearStart`` callback turns off during training. The switch is also kept in a
    buffer, so that a checkpoint taken before or after the switch restores the right mode.

    Args:
        vocab_size: V, words and answers (id 0 is padding).
        dim: d.
        hops: K.
        update: how the state moves between hops (the block's ``update``).
        attention: the memory block.
        linear_start: start without the softmax in the hops.
    """

    def __init__(
        self,
        vocab_size: PositiveInt,
        dim: PositiveInt,
        hops: PositiveInt,
        update: Literal["add", "linear", "per_hop"],
        attention: MemoryBlock,
        linear_start: bool,
    ) -> None:
        super().__init__()
        self.vocab_size, self.dim, self.hops = vocab_size, dim, hops
        self.read = build(attention, dim, hops=hops, update=update, linear_start=linear_start, kind="memory")
        with torch.no_grad():  # the state update starts as u + o: H = R_k = I (default init stalls KV-MemNN)
            for matrix in (getattr(self.read, "H", None), *getattr(self.read, "R", ())):
                if matrix is not None:
                    nn.init.eye_(matrix.weight)
        self.register_buffer("softmax_removed", torch.tensor(linear_start))
        self.register_load_state_dict_post_hook(lambda module, keys: module._sync_linear_start())

    @property
    def linear_start(self) -> bool:
        """Whether the hops run without their softmax (linear start)."""
        return bool(self.softmax_removed)

    @linear_start.setter
    def linear_start(self, value: bool) -> None:
        self.softmax_removed.fill_(value)
        self._sync_linear_start()

    def _sync_linear_start(self) -> None:
        if hasattr(self.read, "linear_start"):
            self.read.linear_start = bool(self.softmax_removed)

    def attend(
        self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Optional[Tensor]]:
        """The block's read of the memory: final state u^{K+1} (B, d), and the weights
        (B, K, N) of every hop when asked (None for the no-attention baseline)."""
        out = self.read(query, keys, values, mask, need_weights=need_weights)
        if isinstance(out, AttentionOutput):
            return out.output, out.weights
        return out, None
