"""Decoding of the NLP models: the core's greedy and beam search (:mod:`framework.decoding`)
with the tokenisers' special ids (``<pad>``, ``<s>``, ``</s>``, :mod:`domains.nlp.data.tokenization`)."""

from __future__ import annotations

from torch import Tensor

from framework import decoding
from framework.decoding import Decodable, Specials, length_normalised

from .data.tokenization import BOS, EOS, PAD

SPECIALS = Specials(pad=PAD, bos=BOS, eos=EOS)

__all__ = ["SPECIALS", "beam_search", "greedy_decode", "length_normalised"]


def greedy_decode(model: Decodable, tokens: Tensor, mask: Tensor, max_length: int) -> Tensor:
    """:func:`framework.decoding.greedy_decode` of token sources (B, N) with NLP's special ids."""
    return decoding.greedy_decode(model, tokens, mask, max_length, specials=SPECIALS)


def beam_search(
    model: Decodable, tokens: Tensor, mask: Tensor, beam_size: int, max_length: int, length_penalty: float = 0.0
) -> tuple[Tensor, Tensor]:
    """:func:`framework.decoding.beam_search` of token sources (B, N) with NLP's special ids."""
    return decoding.beam_search(model, tokens, mask, beam_size, max_length, length_penalty, specials=SPECIALS)
