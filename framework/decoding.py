"""Greedy and beam-search decoding of autoregressive models, batched over examples.

A decodable model has two methods::

    start(source, source_mask) -> state            encode the source once (tokens and mask,
                                                   a waveform and its lengths ...)
    step(state, previous) -> (logits (B, V), state)   one output step after the tokens ``previous`` (B,)

A state is a dict of tensors whose first axis is the batch, so that beam search can reorder
it with ``index_select``. Both searches loop over output steps only (one ``model.step`` per
step for the whole batch, or for all B x K beams). A finished sequence (it emitted the end
token) is continued with the padding token at no cost, so it keeps its score while the
others grow. The score of a sequence is the sum of the log-probabilities of its tokens, the
end token included. The special tokens are the vocabulary's (:class:`Specials`): each domain
names its own.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from .errors import ConfigError

State = dict[str, Tensor]


class Specials(NamedTuple):
    """The ids of a vocabulary's special tokens: padding, begin and end of sequence."""

    pad: int
    bos: int
    eos: int


class Decodable(Protocol):
    def start(self, source: Tensor, source_mask: Tensor) -> State: ...

    def step(self, state: State, previous: Tensor) -> tuple[Tensor, State]: ...


def shift_right(target: Tensor, bos: int) -> Tensor:
    """Decoder inputs for teacher forcing: the begin token, then the target without its last
    token, (B, M) -> (B, M)."""
    return torch.cat([torch.full_like(target[:, :1], bos), target[:, :-1]], dim=1)


def reorder(state: State, index: Tensor) -> State:
    """The state of the rows ``index`` (B',) of every entry."""
    return {key: value.index_select(0, index) for key, value in state.items()}


def greedy_decode(
    model: Decodable, source: Tensor, source_mask: Tensor, max_length: int, *, specials: Specials
) -> Tensor:
    """The most probable next token at every step: a batch of B sources -> (B, L) ids,
    L <= max_length, each row ending with the end token then padding (or cut at ``max_length``)."""
    state = model.start(source, source_mask)
    batch, device = len(source), source.device
    previous = torch.full((batch,), specials.bos, dtype=torch.long, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    outputs = []
    for _ in range(max_length):
        logits, state = model.step(state, previous)
        previous = logits.argmax(-1).masked_fill(finished, specials.pad)
        outputs.append(previous)
        finished |= previous == specials.eos
        if finished.all():
            break
    return torch.stack(outputs, dim=1)


def length_normalised(scores: Tensor, lengths: Tensor, length_penalty: float) -> Tensor:
    """GNMT's length normalisation (Wu et al., 2016): score / ((5 + |y|) / 6)^alpha; alpha = 0 keeps the score."""
    return scores / ((5.0 + lengths.to(scores.dtype)) / 6.0) ** length_penalty


def beam_search(
    model: Decodable,
    source: Tensor,
    source_mask: Tensor,
    beam_size: int,
    max_length: int,
    length_penalty: float = 0.0,
    *,
    specials: Specials,
) -> tuple[Tensor, Tensor]:
    """The ``beam_size`` best prefixes by summed log-probability are kept at every step.

    Args:
        model: a decodable model (``start``, ``step``).
        source, source_mask: what ``model.start`` reads, B examples.
        beam_size: K. max_length: output steps at most.
        length_penalty: alpha of :func:`length_normalised`, applied to choose among the
            final K hypotheses (0: the highest summed log-probability).
        specials: the vocabulary's padding, begin and end ids.

    Returns: ids (B, L) of the best hypothesis per example (the end token then padding;
    columns of padding only are cut), and its score (B,) (summed log-probability,
    length-normalised when alpha > 0).
    """
    if beam_size < 1:
        raise ConfigError(f"task.beam_size must be at least 1, got {beam_size}")
    batch, k, device = len(source), beam_size, source.device
    state = reorder(model.start(source, source_mask), torch.arange(batch, device=device).repeat_interleave(k))
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # one live hypothesis per example at the start
    previous = torch.full((batch * k,), specials.bos, dtype=torch.long, device=device)
    finished = torch.zeros(batch * k, dtype=torch.bool, device=device)
    history = torch.empty(batch * k, 0, dtype=torch.long, device=device)
    for _ in range(max_length):
        logits, state = model.step(state, previous)
        log_probs = F.log_softmax(logits.float(), dim=-1)
        done = torch.full_like(log_probs[:1], float("-inf"))
        done[0, specials.pad] = 0.0
        log_probs = torch.where(finished.unsqueeze(1), done, log_probs)
        vocab = log_probs.shape[-1]
        candidates = (scores.reshape(-1, 1) + log_probs).reshape(batch, k * vocab)
        scores, index = candidates.topk(k, dim=-1)
        origin = (torch.arange(batch, device=device).unsqueeze(1) * k + index // vocab).reshape(-1)
        previous = (index % vocab).reshape(-1)
        state = reorder(state, origin)
        history = torch.cat([history.index_select(0, origin), previous.unsqueeze(1)], dim=1)
        finished = finished.index_select(0, origin) | (previous == specials.eos)
        if finished.all():
            break
    lengths = (history != specials.pad).sum(-1).reshape(batch, k)
    final = length_normalised(scores, lengths, length_penalty)
    best = final.argmax(-1)
    chosen = history.index_select(0, torch.arange(batch, device=device) * k + best)
    kept = chosen != specials.pad
    width = int(kept.any(0).nonzero().max()) + 1 if kept.any() else 1
    return chosen[:, :width], final.gather(1, best.unsqueeze(1)).squeeze(1)
