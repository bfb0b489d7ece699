"""Greedy and beam search against each other and against exhaustive search."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from domains.nlp.data.tokenization import BOS, EOS, PAD
from domains.nlp.decoding import beam_search, greedy_decode, length_normalised
from domains.nlp.models import RecurrentSeq2Seq, TransformerSeq2Seq, teacher_inputs

V = 7  # <pad>, <unk>, <s>, </s>, a = 4, b = 5, c = 6
A, B_, C = 4, 5, 6


class MarkovModel:
    """A toy decoder whose next-token distribution depends on the previous token only:
    log p(y_t | y_{t-1}) = table[example, y_{t-1}]."""

    def __init__(self, table: torch.Tensor) -> None:
        self.table = table.log_softmax(-1)  # (B, V, V)

    def start(self, tokens, mask):
        return {"example": torch.arange(len(tokens))}

    def step(self, state, previous):
        return self.table[state["example"], previous], state


def sequence_score(log_probs_of, sequence) -> float:
    """Summed log-probability of a sequence up to and including </s>; after </s> only <pad>
    may follow (at no cost), anything else makes the sequence impossible."""
    total, previous = 0.0, BOS
    for position, token in enumerate(sequence):
        total += float(log_probs_of(previous)[token])
        if token == EOS:
            return total if all(t == PAD for t in sequence[position + 1 :]) else float("-inf")
        previous = token
    return total


def test_beam_search_finds_the_better_sequence_that_greedy_misses():
    # From <s>: a (0.6) or b (0.4). After a: a, b or c, equally unlikely to end. After b: </s> (0.95).
    probs = torch.full((1, V, V), 1e-6)
    probs[0, BOS, A], probs[0, BOS, B_] = 0.6, 0.4
    probs[0, A, [A, B_, C, EOS]] = torch.tensor([0.3, 0.3, 0.3, 0.1])
    probs[0, B_, EOS] = 0.95
    probs[0, C, EOS] = 0.5
    model = MarkovModel(probs.log())
    source = torch.zeros(1, 3, dtype=torch.long)
    mask = torch.ones(1, 3, dtype=torch.bool)
    greedy = greedy_decode(model, source, mask, max_length=3)
    beam, score = beam_search(model, source, mask, beam_size=2, max_length=3)
    assert beam.tolist() == [[B_, EOS]]
    log_probs_of = lambda prev: model.table[0, prev]
    assert score.item() == pytest.approx(sequence_score(log_probs_of, beam[0].tolist()), abs=1e-5)
    assert score.item() > sequence_score(log_probs_of, greedy[0].tolist()) + 0.5


def test_a_wide_beam_is_exhaustive_search():
    torch.manual_seed(0)
    model = MarkovModel(torch.randn(3, V, V) * 2)
    source, mask = torch.zeros(3, 2, dtype=torch.long), torch.ones(3, 2, dtype=torch.bool)
    length = 3
    sequences, scores = beam_search(model, source, mask, beam_size=V**length, max_length=length)
    for example in range(3):
        log_probs_of = lambda prev, e=example: model.table[e, prev]
        best = max(sequence_score(log_probs_of, s) for s in itertools.product(range(V), repeat=length))
        assert scores[example].item() == pytest.approx(best, abs=1e-5)
        assert sequence_score(log_probs_of, sequences[example].tolist()) == pytest.approx(best, abs=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: RecurrentSeq2Seq(11, dim=8, embed_dim=6, attention="additive", style="bahdanau"),
        lambda: RecurrentSeq2Seq(11, dim=8, embed_dim=6, attention="general", style="luong", cell="lstm"),
        lambda: TransformerSeq2Seq(11, dim=8),
    ],
)
def test_greedy_is_beam_search_of_width_one_and_never_beats_a_wider_beam_here(make):
    torch.manual_seed(0)
    model = make().eval()
    source = torch.randint(4, 11, (4, 5))
    mask = torch.ones(4, 5, dtype=torch.bool)
    with torch.no_grad():
        greedy = greedy_decode(model, source, mask, max_length=6)
        one, _ = beam_search(model, source, mask, beam_size=1, max_length=6)
        wide, wide_scores = beam_search(model, source, mask, beam_size=5, max_length=6)
        assert torch.equal(greedy, one)

        def score(sequences):  # teacher-forced summed log-probability, </s> included, pads excluded
            logits = model(source, mask, teacher_inputs(sequences))
            taken = F.log_softmax(logits, -1).gather(-1, sequences.unsqueeze(-1)).squeeze(-1)
            return (taken * (sequences != PAD)).sum(-1)

        torch.testing.assert_close(score(wide), wide_scores, atol=1e-4, rtol=1e-4)
        assert torch.all(score(wide) >= score(greedy) - 1e-4)


def test_finished_hypotheses_keep_their_score_and_are_padded():
    probs = torch.full((1, V, V), 1e-3)
    probs[0, BOS, EOS] = 1.0
    model = MarkovModel(probs.log())
    source, mask = torch.zeros(1, 2, dtype=torch.long), torch.ones(1, 2, dtype=torch.bool)
    sequences, _ = beam_search(model, source, mask, beam_size=3, max_length=5)
    assert sequences.tolist() == [[EOS]]
    assert greedy_decode(model, source, mask, max_length=5).tolist() == [[EOS]]


def test_length_normalisation_is_gnmts():
    scores, lengths = torch.tensor([-2.0, -3.0]), torch.tensor([2, 8])
    torch.testing.assert_close(length_normalised(scores, lengths, 0.0), scores)
    torch.testing.assert_close(length_normalised(scores, lengths, 1.0), scores / torch.tensor([7 / 6, 13 / 6]))
    with pytest.raises(ValueError, match="task.beam_size must be at least 1"):
        beam_search(
            MarkovModel(torch.zeros(1, V, V)),
            torch.zeros(1, 1, dtype=torch.long),
            torch.ones(1, 1, dtype=torch.bool),
            0,
            3,
        )
