"""Sequence metrics against sacreBLEU and written-out formulas."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torchmetrics.text import Perplexity, SacreBLEUScore

from domains.nlp.data.tokenization import PAD
from domains.nlp.metrics import ExactMatch, TokenAccuracy

HYPOTHESES = ["A man is riding a bike down the street.", "Two dogs play in the snow.", "a girl smiles", "People."]
REFERENCES = [
    "A man rides a bicycle down the street.",
    "Two dogs are playing in the snow.",
    "A girl is smiling.",
    "People.",
]


def test_bleu_is_sacrebleus_corpus_bleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    metric = SacreBLEUScore(tokenize="13a")  # as the Translation task builds it
    metric.update(HYPOTHESES[:2], [[r] for r in REFERENCES[:2]])
    metric.update(HYPOTHESES[2:], [[r] for r in REFERENCES[2:]])  # corpus statistics add up over batches
    expected = sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score / 100
    assert metric.compute().item() == pytest.approx(expected, abs=1e-4)
    assert 0.2 < expected < 0.8


def test_exact_match_counts_identical_strings():
    metric = ExactMatch()
    metric.update(["1998-05-09", "2001-01-01 "], [["1998-05-09"], ["2001-01-01"]])
    metric.update(["1998-05-10", "a b"], [["1998-05-09"], ["a c", " a b"]])  # one of the references is enough
    assert metric.compute().item() == pytest.approx(3 / 4)
    with pytest.raises(ValueError, match="2 hypotheses but 1 lists of references"):
        metric.update(["a", "b"], [["a"]])


def test_token_accuracy_and_perplexity_skip_padding():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 11)
    target = torch.randint(4, 11, (3, 5))
    target[0, 3:], target[2, 1:] = PAD, PAD
    accuracy, perplexity = TokenAccuracy(PAD), Perplexity(ignore_index=PAD)
    accuracy.update(logits, target)
    perplexity.update(logits, target)
    hits, count, nll = 0, 0, 0.0
    for b in range(3):
        for t in range(5):
            if target[b, t] != PAD:
                count += 1
                hits += int(logits[b, t].argmax() == target[b, t])
                nll -= float(F.log_softmax(logits[b, t], -1)[target[b, t]])
    assert accuracy.compute().item() == pytest.approx(hits / count)
    assert perplexity.compute().item() == pytest.approx(math.exp(nll / count), rel=1e-5)
