"""Attention whose alignment carries over from one output step to the next.

Location-aware attention reads the previous step's alignment through a convolution, and
monotonic attention moves forward from where the previous step stopped: both need, at output
step i, what they left at step i - 1. :class:`RecurrentAlignment` is their base. It runs the
queries of a call in order, from a ``state`` the caller passes in (the block's
:meth:`~RecurrentAlignment.initial_state` when none is), and :meth:`~RecurrentAlignment.attend`
hands the state after the last query back, so that a decoder that attends once per output
step (Bahdanau style, a speller) threads it through its own decoding state::

    state = block.initial_state(mask)                      # (B, [h,] N)
    for each output step:
        context, weights, state = block.attend(query, keys, key_padding_mask=mask, state=state)

Called like any cross block (``block(query, keys)``), the queries of the call are one
sequence of output steps starting from the initial state: right for a decoder whose queries
are all known under teacher forcing, wrong for one step at a time (use ``attend``).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch
from torch import Tensor

from ..base import AttentionBlock, AttentionOutput


class Aligned(NamedTuple):
    """What :meth:`RecurrentAlignment.attend` returns: the outputs of the queries (B, M, D_out),
    their weights (B, [h,] M, N), and the alignment state after the last query (B, [h,] N)."""

    output: Tensor
    weights: Tensor
    state: Tensor


class RecurrentAlignment(AttentionBlock):
    """Base of the cross blocks whose alignment at output step i depends on that of step i - 1.

    A subclass sets ``dim``, ``key_dim`` and ``value_dim`` and defines

    * :meth:`initial_state` (valid (B, N) -> the state before the first query), and
    * :meth:`run` (queries (B, M, Dq), keys (B, N, Dk), values (B, N, Dv), valid (B, N),
      state -> :class:`Aligned`), which passes its weights through :meth:`ablate` before
      using them, as every block does.

    Shapes (every subclass):
        query (B, M, Dq), or (B, Dq) for one step; keys (B, N, Dk); values (B, N, Dv)
        (default the keys); ``key_padding_mask`` (B, N) boolean, True = may attend;
        ``state`` as :meth:`initial_state` gives it. ``forward`` returns (B, M, D_out) or
        (B, D_out), with ``need_weights=True`` an ``AttentionOutput(output, weights)``;
        :meth:`attend` returns :class:`Aligned` with the M axis kept.
    """

    dim: int
    key_dim: int
    value_dim: int

    def initial_state(self, valid: Tensor) -> Tensor:
        """The alignment state before the first output step, for the keys ``valid`` (B, N)."""
        raise TypeError(f"{type(self).__name__} must define initial_state(valid)")

    def run(self, query: Tensor, keys: Tensor, values: Tensor, valid: Tensor, state: Tensor) -> Aligned:
        """All M queries in order from ``state`` (inputs already checked)."""
        raise TypeError(f"{type(self).__name__} must define run(query, keys, values, valid, state)")

    def _checked(
        self,
        query: Tensor,
        keys: Tensor,
        values: Optional[Tensor],
        key_padding_mask: Optional[Tensor],
        state: Optional[Tensor],
    ) -> Aligned:
        self.expect("query", query, "B M Dq", Dq=self.dim)
        b, n = query.shape[0], keys.shape[1]
        self.expect("keys", keys, "B N Dk", B=b, Dk=self.key_dim)
        values = keys if values is None else values
        self.expect("values", values, "B N Dv", B=b, N=n, Dv=self.value_dim)
        if key_padding_mask is None:
            valid = torch.ones(b, n, dtype=torch.bool, device=keys.device)
        else:
            self.expect("key_padding_mask", key_padding_mask, "B N", B=b, N=n)
            valid = key_padding_mask.bool()
        initial = self.initial_state(valid).to(query.dtype)
        if state is None:
            state = initial
        elif state.shape != initial.shape:
            raise ValueError(
                f"{self.block_name}: state must have shape {tuple(initial.shape)} (what initial_state "
                f"or the previous attend gives), got {tuple(state.shape)}"
            )
        return self.run(query, keys, values, valid, state)

    def attend(
        self,
        query: Tensor,
        keys: Tensor,
        values: Optional[Tensor] = None,
        *,
        key_padding_mask: Optional[Tensor] = None,
        state: Optional[Tensor] = None,
    ) -> Aligned:
        """The queries (B, M, Dq) in order from ``state`` (default the initial state): their
        outputs and weights, and the state after the last one, to pass to the next call."""
        result = self._checked(query, keys, values, key_padding_mask, state)
        self.record(result.weights, queries=(query.shape[1],), keys=(keys.shape[1],))
        return result

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        values: Optional[Tensor] = None,
        *,
        key_padding_mask: Optional[Tensor] = None,
        state: Optional[Tensor] = None,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        single = query.dim() == 2
        result = self._checked(query.unsqueeze(1) if single else query, keys, values, key_padding_mask, state)
        output, weights = result.output, result.weights
        if single:
            output, weights = output[:, 0], weights.select(-2, 0)
        return self.finish(
            output, weights, need_weights, queries=None if single else (query.shape[1],), keys=(keys.shape[1],)
        )
