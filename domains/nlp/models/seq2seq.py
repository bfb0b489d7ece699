"""What the sequence-to-sequence models share: their output, their decoding state, teacher forcing.

A sequence-to-sequence model here has ``vocab_size`` and three methods::

    forward(tokens, mask, target_in, need_weights=False) -> logits (B, M, V) | Seq2SeqOutput
    start(tokens, mask) -> state               encode the source once
    step(state, previous) -> (logits (B, V), state)     one output step

A state is a dict of tensors whose first axis is the batch, so that beam search can
reorder it with ``index_select`` (:mod:`domains.nlp.decoding`).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from torch import Tensor

from framework.decoding import shift_right

from ..data.tokenization import BOS


class Seq2SeqOutput(NamedTuple):
    """Logits (B, M, V) and the alignment (B, M, N) of each target step over the source
    tokens (None for a model without attention)."""

    logits: Tensor
    alignment: Optional[Tensor]


def teacher_inputs(target: Tensor) -> Tensor:
    """Decoder inputs for teacher forcing: ``<s>`` then the target shifted right, (B, M) -> (B, M)."""
    return shift_right(target, BOS)
