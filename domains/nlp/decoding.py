"""Greedy and beam-search decoding of the sequence-to-sequence models, batched over examples.

Both loop over output steps only (one ``model.step`` per step for the whole batch, or for
all B x K beams). A finished sequence (it emitted ``</s>``) is continued with ``<pad>`` at
no cost, so it keeps its score while the others grow. The score of a sequence is the sum
of the log-probabilities of its tokens, ``</s>`` included.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from .models.seq2seq import State
from .data.tokenization import BOS, EOS, PAD


class Decodable(Protocol):
    def start(self, tokens: Tensor, mask: Tensor) -> State: ...

    def step(self, state: State, previous: Tensor) -> tuple[Tensor, State]: ...


def _reorder(state: State, index: Tensor) -> State:
    return {key: value.index_select(0, index) for key, value in state.items()}


def greedy_decode(model: Decodable, tokens: Tensor, mask: Tensor, max_length: int) -> Tensor:
    """The most probable next token at every step: (B, N) source -> (B, L) ids, L <= max_length,
    each row ending with ``</s>`` then ``<pad>`` (or cut at ``max_length``)."""
    state = model.start(tokens, mask)
    previous = torch.full((len(tokens),), BOS, dtype=torch.long, device=tokens.device)
    finished = torch.zeros(len(tokens), dtype=torch.bool, device=tokens.device)
    outputs = []
    for _ in range(max_length):
        logits, state = model.step(state, previous)
        previous = logits.argmax(-1).masked_fill(finished, PAD)
        outputs.append(previous)
        finished |= previous == EOS
        if finished.all():
            break
    return torch.stack(outputs, dim=1)


def length_normalised(scores: Tensor, lengths: Tensor, length_penalty: float) -> Tensor:
    """GNMT's length normalisation (Wu et al., 2016): score / ((5 + |y|) / 6)^alpha; alpha = 0 keeps the score."""
    return scores / ((5.0 + lengths.to(scores.dtype)) / 6.0) ** length_penalty


def beam_search(model: Decodable, tokens: Tensor, mask: Tensor, beam_size: int, max_length: int,
                length_penalty: float = 0.0) -> tuple[Tensor, Tensor]:
    """The ``beam_size`` best prefixes by summed log-probability are kept at every step.

    Args:
        model: a sequence-to-sequence model (``start``, ``step``).
        tokens, mask: the source, (B, N).
        beam_size: K. max_length: output steps at most.
        length_penalty: alpha of :func:`length_normalised`, applied to choose among the
            final K hypotheses (0: the highest summed log-probability).

    Returns: ids (B, L) of the best hypothesis per example (``</s>`` then ``<pad>``; columns
    of padding only are cut), and its score (B,) (summed log-probability,
    length-normalised when alpha > 0).
    """
    if beam_size < 1:
        raise ValueError(f"task.beam_size must be at least 1, got {beam_size}")
    batch, k, device = len(tokens), beam_size, tokens.device
    state = _reorder(model.start(tokens, mask), torch.arange(batch, device=device).repeat_interleave(k))
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # one live hypothesis per example at the start
    previous = torch.full((batch * k,), BOS, dtype=torch.long, device=device)
    finished = torch.zeros(batch * k, dtype=torch.bool, device=device)
    history = torch.empty(batch * k, 0, dtype=torch.long, device=device)
    for _ in range(max_length):
        logits, state = model.step(state, previous)
        log_probs = F.log_softmax(logits.float(), dim=-1)
        done = torch.full_like(log_probs[:1], float("-inf"))
        done[0, PAD] = 0.0
        log_probs = torch.where(finished.unsqueeze(1), done, log_probs)
        vocab = log_probs.shape[-1]
        candidates = (scores.reshape(-1, 1) + log_probs).reshape(batch, k * vocab)
        scores, index = candidates.topk(k, dim=-1)
        origin = (torch.arange(batch, device=device).unsqueeze(1) * k + index // vocab).reshape(-1)
        previous = (index % vocab).reshape(-1)
        state = _reorder(state, origin)
        history = torch.cat([history.index_select(0, origin), previous.unsqueeze(1)], dim=1)
        finished = finished.index_select(0, origin) | (previous == EOS)
        if finished.all():
            break
    lengths = (history != PAD).sum(-1).reshape(batch, k)
    final = length_normalised(scores, lengths, length_penalty)
    best = final.argmax(-1)
    chosen = history.index_select(0, torch.arange(batch, device=device) * k + best)
    width = int((chosen != PAD).any(0).nonzero().max()) + 1 if (chosen != PAD).any() else 1
    return chosen[:, :width], final.gather(1, best.unsqueeze(1)).squeeze(1)
