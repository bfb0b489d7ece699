"""Sentence and time features: position encoding against the paper's l_kj, memory ages with and
without random noise."""

from __future__ import annotations

import itertools

import torch

from domains.memory.models.encoding import SentenceEmbedding, memory_ages
from tests.attention.reference import assert_matches_reference


def naive_position_encoding(embed, tokens):
    """sum_j l_kj A x_j with l_kj = (1 - j/J) - (k/d)(1 - 2j/J), one sentence and one table at a time."""
    weight = embed.words.weight.view(-1, embed.tables, embed.dim)
    out = torch.zeros(*tokens.shape[:-1], embed.tables, embed.dim, dtype=weight.dtype)
    for index in itertools.product(*map(range, tokens.shape[:-1])):
        words = [w for w in tokens[index].tolist() if w]
        for t in range(embed.tables):
            for j, w in enumerate(words, 1):
                for k in range(1, embed.dim + 1):
                    J, d = len(words), embed.dim
                    out[index + (t, k - 1)] += ((1 - j / J) - (k / d) * (1 - 2 * j / J)) * weight[w, t, k - 1]
    return out


def test_position_encoding_matches_the_paper_forward_and_backward(device):
    tokens = torch.tensor([[[4, 2, 7, 0], [1, 0, 0, 0]], [[3, 3, 5, 6], [0, 0, 0, 0]]])
    embed = SentenceEmbedding(8, 5, tables=2, position=True)
    assert_matches_reference(embed, naive_position_encoding, tokens, device=device)


def test_ages_count_back_from_the_most_recent_sentence():
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    assert memory_ages(mask).tolist() == [[2, 1, 0, 0], [0, 0, 0, 0]]


def test_random_noise_inserts_up_to_ten_percent_empty_slots_keeping_the_order():
    mask = torch.arange(30).unsqueeze(0).repeat(2000, 1) < torch.randint(1, 31, (2000, 1))
    ages = memory_ages(mask, noise=0.1, generator=torch.Generator().manual_seed(0))
    counts = mask.sum(1)
    real = ages.masked_fill(~mask, -1)
    assert (ages[~mask] == 0).all()
    steps = real[:, :-1] - real[:, 1:]  # consecutive real sentences: strictly younger
    assert (steps[mask[:, 1:]] >= 1).all()
    blanks = ages[:, 0] - (counts - 1)  # the oldest sentence's age, beyond the plain count
    most = torch.ceil(counts * 0.1)
    assert (blanks >= 0).all() and (blanks <= most).all()
    assert (blanks > 0).any() and (blanks == 0).any()
    fresh = memory_ages(mask, noise=0.1, generator=torch.Generator().manual_seed(0))
    assert torch.equal(ages, fresh)
