"""Models: decoder steps against written-out formulas, padding invariance, incremental = full decoding."""

from __future__ import annotations

import pytest
import torch

from domains.nlp.data.tokenization import BOS, PAD
from domains.nlp.models import (
    HierarchicalAttentionNetwork,
    RecurrentSeq2Seq,
    SelfAttentiveClassifier,
    TransformerClassifier,
    TransformerSeq2Seq,
    teacher_inputs,
)
from tests.attention.reference import assert_matches_reference, randomize_

V, D, E = 23, 8, 6


def tokens_and_mask(lengths: list[int], n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids (B, n) right-padded to the lengths, and the mask."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    tokens = torch.randint(4, V, (len(lengths), n), generator=g).masked_fill(~mask, PAD)
    return tokens, mask


def naive_gru(x, h, rnn):
    """One GRU step written out (PyTorch's gate order r, z, n)."""
    w_ir, w_iz, w_in = rnn.weight_ih_l0.chunk(3)
    w_hr, w_hz, w_hn = rnn.weight_hh_l0.chunk(3)
    b_ir, b_iz, b_in = rnn.bias_ih_l0.chunk(3)
    b_hr, b_hz, b_hn = rnn.bias_hh_l0.chunk(3)
    r = torch.sigmoid(x @ w_ir.T + b_ir + h @ w_hr.T + b_hr)
    z = torch.sigmoid(x @ w_iz.T + b_iz + h @ w_hz.T + b_hz)
    n = torch.tanh(x @ w_in.T + b_in + r * (h @ w_hn.T + b_hn))
    return (1 - z) * n + z * h


def softmax_over(scores, mask):
    """softmax of scores (B, N) over the True entries of mask, explicitly."""
    w = torch.exp(scores - scores.max()) * mask
    return w / w.sum(-1, keepdim=True)


def first_step_reference(style):
    """Logits of the first output step, y_0 = <s>, from the model's parameters and the
    equations of Bahdanau et al. (additive score) or Luong et al. (general score)."""

    def reference(model, tokens, mask, target_in):
        memory, final = model.encoder(model.embed(tokens), mask)  # (B, N, D)
        s0 = torch.tanh(final @ model.bridge.weight.T + model.bridge.bias)
        y0 = model.embed.weight[BOS].expand(len(tokens), -1)
        score = model.attention.score

        def attend(query):
            if style == "bahdanau":  # e_j = w^T tanh(W1 q + W2 h_j + b)
                e = torch.stack(
                    [
                        torch.tanh(
                            query @ score.query_weight[0] + memory[:, j] @ score.key_weight[0] + score.bias[0, 0]
                        )
                        @ score.out[0, :, 0]
                        for j in range(memory.shape[1])
                    ],
                    1,
                )
            else:  # e_j = q^T W h_j
                e = torch.stack([((query @ score.weight[0]) * memory[:, j]).sum(-1) for j in range(memory.shape[1])], 1)
            a = softmax_over(e, mask)
            return (a.unsqueeze(-1) * memory).sum(1)

        if style == "bahdanau":
            context = attend(s0)
            s1 = naive_gru(torch.cat([y0, context], -1), s0, model.rnn)
            features = torch.cat([s1, context, y0], -1)
        else:
            h1 = naive_gru(y0, s0, model.rnn)
            features = torch.cat([attend(h1), h1], -1)
        hidden = torch.tanh(features @ model.readout.weight.T + model.readout.bias)
        return (hidden @ model.output.weight.T + model.output.bias).unsqueeze(1)

    return reference


@pytest.mark.parametrize("style,attention", [("bahdanau", "additive"), ("luong", "general")])
def test_first_decoder_step_matches_the_papers_equations(style, attention, device):
    # Training mode (dropout 0: deterministic all the same): cuDNN's RNN backward refuses eval mode.
    model = randomize_(RecurrentSeq2Seq(V, dim=D, embed_dim=E, attention=attention, style=style, dropout=0.0)).train()
    tokens, mask = tokens_and_mask([5, 3], 5)
    start = torch.full((2, 1), BOS)
    assert_matches_reference(model, first_step_reference(style), tokens, mask, start, device=device)


RECURRENT = [
    (s, c, a)
    for s in ("bahdanau", "luong")
    for c in ("gru", "lstm")
    for a in ("additive", "dot", "general", "concat", "location", "local_p", "none")
]


def make_seq2seq(kind: str):
    if kind == "transformer":
        return TransformerSeq2Seq(V, dim=D, depth=2, cross_attention="multi_head")
    style, cell, attention = kind.split("-")
    return RecurrentSeq2Seq(V, dim=D, embed_dim=E, attention=attention, style=style, cell=cell)


@pytest.mark.parametrize("kind", ["-".join(r) for r in RECURRENT] + ["transformer"])
def test_step_by_step_decoding_gives_the_teacher_forced_logits(kind):
    torch.manual_seed(0)
    model = make_seq2seq(kind).eval()
    tokens, mask = tokens_and_mask([6, 4, 2], 6)
    target_in = teacher_inputs(torch.randint(4, V, (3, 5)))
    full = model(tokens, mask, target_in)
    state, steps = model.start(tokens, mask), []
    for t in range(target_in.shape[1]):
        logits, state = model.step(state, target_in[:, t])
        steps.append(logits)
    torch.testing.assert_close(torch.stack(steps, 1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "kind,normalised",
    [
        ("bahdanau-gru-additive", True),
        ("luong-lstm-dot", True),
        ("luong-gru-local_p", False),  # the Gaussian factor of local-p leaves rows below 1
        ("bahdanau-gru-none", None),
        ("transformer", True),
    ],
)
def test_padding_the_source_changes_nothing(kind, normalised):
    torch.manual_seed(0)
    model = make_seq2seq(kind).eval()
    tokens, mask = tokens_and_mask([4, 2], 4)
    padded = torch.cat([tokens, torch.zeros(2, 3, dtype=torch.long)], 1)
    target_in = teacher_inputs(torch.randint(4, V, (2, 3)))
    out, out_padded = (model(t, t != PAD, target_in, need_weights=True) for t in (tokens, padded))
    torch.testing.assert_close(out_padded.logits, out.logits, atol=1e-5, rtol=1e-5)
    if normalised is None:
        assert out.alignment is None
        return
    assert torch.all(out_padded.alignment[..., 4:] == 0) and torch.all(out.alignment[1, :, 2:] == 0)
    torch.testing.assert_close(out_padded.alignment[..., :4], out.alignment, atol=1e-5, rtol=1e-5)
    if normalised:
        torch.testing.assert_close(out.alignment.sum(-1), torch.ones(2, 3), atol=1e-5, rtol=1e-5)


def test_the_transformer_decoder_is_causal():
    torch.manual_seed(0)
    model = TransformerSeq2Seq(V, dim=D).eval()
    tokens, mask = tokens_and_mask([5, 3], 5)
    target_in = teacher_inputs(torch.randint(4, V, (2, 6)))
    changed = target_in.clone()
    changed[:, 4:] = torch.randint(4, V, (2, 2))
    torch.testing.assert_close(model(tokens, mask, changed)[:, :4], model(tokens, mask, target_in)[:, :4])


CLASSIFIERS = [
    lambda: SelfAttentiveClassifier(
        V, 3, embed_dim=E, dim=D, attention="pooling", num_queries=3, attention_hidden=5, hidden=7
    ),
    lambda: SelfAttentiveClassifier(V, 3, embed_dim=E, dim=D, attention="multi_dimensional", num_queries=2, hidden=7),
    lambda: SelfAttentiveClassifier(V, 3, embed_dim=E, dim=D, attention="none", hidden=7),
    lambda: TransformerClassifier(V, 3, dim=D, readout="pooling"),
    lambda: TransformerClassifier(V, 3, dim=D, readout="cls"),
    lambda: TransformerClassifier(V, 3, dim=D, attention="none", pooling="none"),
]


@pytest.mark.parametrize(
    "make",
    CLASSIFIERS,
    ids=["selfattentive", "multi_dimensional", "mean", "transformer-pooling", "transformer-cls", "transformer-none"],
)
def test_classifiers_ignore_padding_and_weigh_only_real_tokens(make):
    torch.manual_seed(0)
    model = make().eval()
    tokens, mask = tokens_and_mask([5, 2], 5)
    padded = torch.cat([tokens, torch.zeros(2, 4, dtype=torch.long)], 1)
    out, out_padded = (model(t, t != PAD, need_weights=True) for t in (tokens, padded))
    torch.testing.assert_close(out_padded.logits, out.logits, atol=1e-5, rtol=1e-5)
    assert torch.all(out_padded.token_weights[:, 5:] == 0) and torch.all(out.token_weights[1, 2:] == 0)
    torch.testing.assert_close(out.token_weights.sum(-1), torch.ones(2), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model(tokens, mask), out.logits)


@pytest.mark.parametrize("attention", ["hierarchical", "none"])
def test_han_ignores_padded_words_and_sentences(attention):
    torch.manual_seed(0)
    model = HierarchicalAttentionNetwork(V, 3, embed_dim=E, dim=D, attention=attention, attention_hidden=5).eval()
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(4, V, (2, 2, 3), generator=g)
    tokens[1, 1] = PAD  # the second document has one sentence
    tokens[0, 1, 2] = PAD
    padded = torch.zeros(2, 4, 5, dtype=torch.long)
    padded[:, :2, :3] = tokens
    out, out_padded = (model(t, t != PAD, need_weights=True) for t in (tokens, padded))
    torch.testing.assert_close(out_padded.logits, out.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out_padded.token_weights[:, :2, :3], out.token_weights, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.token_weights.sum((1, 2)), torch.ones(2), atol=1e-5, rtol=1e-5)
    assert torch.all(out.token_weights[1, 1] == 0) and out.token_weights[0, 1, 2] == 0


def test_han_needs_sentences_and_the_self_attentive_model_a_pooling_block():
    model = HierarchicalAttentionNetwork(V, 3, embed_dim=E, dim=D)
    tokens, mask = tokens_and_mask([3], 3)
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, S, W\).*data.sentences=true"):
        model(tokens, mask)
    with pytest.raises(ValueError, match="model.attention: the hierarchical attention network takes 'hierarchical'"):
        HierarchicalAttentionNetwork(V, 3, attention="pooling")
    with pytest.raises(ValueError, match="model.attention: 'hierarchical' .* cannot pool one sequence"):
        SelfAttentiveClassifier(V, 3, attention="hierarchical")
    with pytest.raises(ValueError, match="model.attention: 'mhsa' .* cannot pool one sequence"):
        SelfAttentiveClassifier(V, 3, attention="mhsa")
    with pytest.raises(ValueError, match="model.cell must be one of gru, lstm, got 'rnn'"):
        RecurrentSeq2Seq(V, cell="rnn")
