"""MemN2N and KV-MemNN against the papers' equations written naively (one example, one
sentence, one hop at a time), forward and backward; the linear-start switch; bad settings."""

from __future__ import annotations

import pytest
import torch

from domains.memory import KVMemNN, MemN2N
from domains.memory.models.encoding import SentenceEmbedding
from tests.attention.reference import assert_matches_reference

V, D, HOPS, SLOTS = 12, 6, 3, 8


def encode(table, sentence, position):
    """Phi(A, x): sum_j l_j . A x_j, l_kj = (1 - j/J) - (k/d)(1 - 2j/J) (PE) or l = 1 (BoW)."""
    words = [w for w in sentence.tolist() if w != 0]
    J, d = len(words), table.shape[1]
    total = table.new_zeros(d)
    for j, w in enumerate(words, 1):
        if position:
            encoding = torch.tensor(
                [(1 - j / J) - (k / d) * (1 - 2 * j / J) for k in range(1, d + 1)], dtype=table.dtype
            )
        else:
            encoding = table.new_ones(d)
        total = total + encoding * table[w]
    return total


def softmax_or_linear(scores, linear):
    return scores if linear else torch.exp(scores - scores.max()) / torch.exp(scores - scores.max()).sum()


def memn2n_reference(model, story, question):
    """Sukhbaatar et al. 2015, §2 and §4.1, eval mode (no random noise)."""
    tables = model.words.words.weight.view(V, -1, D)
    times = model.time.ages.weight.view(SLOTS, -1, D)
    pe = model.words.position
    rows = []
    for b in range(story.shape[0]):
        sentences = [s for s in story[b] if s.any()]
        n = len(sentences)
        ages = [n - 1 - i for i in range(n)]
        if model.tying == "adjacent":
            A = lambda k: tables[:, k]  # A^k = E_{k-1} (k from 0 here), C^k = E_k
            C = lambda k: tables[:, k + 1]
            TA = lambda k: times[:, k]
            TC = lambda k: times[:, k + 1]
            u = encode(tables[:, 0], question[b], pe)  # B = A^1
            W = tables[:, HOPS]  # W^T = C^K
        else:
            A, C = (lambda k: tables[:, 0]), (lambda k: tables[:, 1])
            TA, TC = (lambda k: times[:, 0]), (lambda k: times[:, 1])
            u = encode(model.question_words.words.weight, question[b], pe)
            W = model.output.weight
        for k in range(HOPS):
            m = torch.stack([encode(A(k), s, pe) + TA(k)[a] for s, a in zip(sentences, ages)])
            c = torch.stack([encode(C(k), s, pe) + TC(k)[a] for s, a in zip(sentences, ages)])
            p = softmax_or_linear(m @ u, model.linear_start)
            o = p @ c
            u = u + o if model.tying == "adjacent" else model.read.H.weight @ u + o
        rows.append(W @ u)
    return torch.stack(rows)


def kvmemnn_reference(model, story, question):
    """Miller et al. 2016, §3.1: q^{j+1} = R_j (q^j + o^j), answer B q^{H+1}; temporal keys and values."""
    A = model.words.words.weight
    times = model.time.ages.weight.view(SLOTS, 2, D)
    rows = []
    for b in range(story.shape[0]):
        sentences = [s for s in story[b] if s.any()]
        n = len(sentences)
        keys = torch.stack([encode(A, s, True) + times[n - 1 - i, 0] for i, s in enumerate(sentences)])
        values = torch.stack([encode(A, s, True) + times[n - 1 - i, 1] for i, s in enumerate(sentences)])
        q = encode(A, question[b], True)
        for j in range(HOPS):
            p = softmax_or_linear(keys @ q, model.linear_start)
            q = model.read.R[j].weight @ (q + p @ values)
        rows.append(model.candidates.weight @ q)
    return torch.stack(rows)


def batch(seed=0):
    """Three stories of 4, 2 and 5 sentences (padded to 5) of 1-4 words; questions of 2-3 words."""
    gen = torch.Generator().manual_seed(seed)
    story = torch.zeros(3, 5, 4, dtype=torch.long)
    for b, sentences in enumerate((4, 2, 5)):
        for i in range(sentences):
            words = int(torch.randint(1, 5, (1,), generator=gen))
            story[b, i, :words] = torch.randint(1, V, (words,), generator=gen)
    question = torch.randint(1, V, (3, 3), generator=gen)
    question[1, 2] = 0
    return story, question


def randomized(model):
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    return model.eval()


@pytest.mark.parametrize("tying", ["adjacent", "layerwise"])
@pytest.mark.parametrize("position", [True, False], ids=["pe", "bow"])
@pytest.mark.parametrize("linear_start", [False, True])
def test_memn2n_matches_the_paper(tying, position, linear_start, device):
    model = randomized(MemN2N(V, D, HOPS, SLOTS, tying=tying, position_encoding=position, linear_start=linear_start))
    assert_matches_reference(model, memn2n_reference, *batch(), device=device)


@pytest.mark.parametrize("linear_start", [False, True])
def test_kvmemnn_matches_the_paper(linear_start, device):
    model = randomized(KVMemNN(V, D, HOPS, SLOTS, linear_start=linear_start))
    assert_matches_reference(model, kvmemnn_reference, *batch(), device=device)


def test_state_updates_start_as_the_identity():
    eye = torch.eye(D)
    assert torch.equal(MemN2N(V, D, HOPS, SLOTS, tying="layerwise").read.H.weight, eye)
    assert all(torch.equal(r.weight, eye) for r in KVMemNN(V, D, HOPS, SLOTS).read.R)


def test_sentence_embedding_pads_to_zero_and_ignores_padding():
    embed = SentenceEmbedding(V, D, tables=2)
    assert not embed.words.weight[0].any()
    x = torch.tensor([[3, 5, 0, 0]])
    torch.testing.assert_close(embed(x), embed(x[:, :2]))


@pytest.mark.parametrize("model_class", [MemN2N, KVMemNN])
def test_hop_weights_are_distributions_over_the_real_sentences(model_class):
    story, question = batch()
    logits, weights = model_class(V, D, HOPS, SLOTS).eval()(story, question, need_weights=True)
    assert logits.shape == (3, V) and weights.shape == (3, HOPS, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, HOPS))
    assert not weights[1, :, 2:].any()  # story 1 has two sentences


def test_no_attention_baseline_answers_from_the_question_alone():
    story, question = batch()
    model = MemN2N(V, D, HOPS, SLOTS, attention="none").eval()
    logits, weights = model(story, question, need_weights=True)
    assert weights is None
    torch.testing.assert_close(logits, model(torch.zeros_like(story), question))


def test_linear_start_switch_reaches_the_block_and_survives_a_checkpoint():
    model = MemN2N(V, D, HOPS, SLOTS, linear_start=True)
    assert model.read.linear_start
    model.linear_start = False
    assert not model.read.linear_start
    restored = MemN2N(V, D, HOPS, SLOTS, linear_start=True)
    restored.load_state_dict(model.state_dict())
    assert not restored.linear_start and not restored.read.linear_start


def test_random_noise_acts_only_while_training():
    story, question = batch()
    model = MemN2N(V, D, HOPS, SLOTS, random_noise=0.5)
    torch.testing.assert_close(model.eval()(story, question), model(story, question))
    model.train()
    outputs = {tuple(model(story, question)[0].tolist()) for _ in range(20)}
    assert len(outputs) > 1


def test_a_block_of_another_kind_names_the_slot():
    """Values outside their keys' domains are refused while parsing (tests/domains/memory/test_training.py)."""
    with pytest.raises(ValueError, match="this slot takes memory blocks"):
        MemN2N(V, attention="mhsa")
