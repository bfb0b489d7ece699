"""Pointing ("pointer", "pointer_generator") against the papers' formulas written out by hand
(float64, outputs and gradients, with masks)."""

from __future__ import annotations

import pytest
import torch

from framework.attention import AttentionOutput, ablation, capture, create
from tests.attention.reference import assert_matches_reference, randomize_

B, M, N, D = 2, 3, 5, 6


def pointer_reference(block, query, keys, *, key_padding_mask=None, attn_mask=None, need_weights=False):
    """u_ij = v^T tanh(W1 e_j + W2 d_i + b); log softmax over the allowed positions, -inf elsewhere."""
    s = block.score
    single = query.dim() == 2
    query = query.unsqueeze(1) if single else query
    hidden = torch.tanh((query @ s.query_weight[0] + s.bias[0, 0])[:, :, None] + (keys @ s.key_weight[0])[:, None])
    energies = hidden @ s.out[0, :, 0]  # (B, M, N)
    allowed = torch.ones_like(energies, dtype=torch.bool)
    if key_padding_mask is not None:
        allowed = allowed & key_padding_mask[:, None]
    if attn_mask is not None:
        allowed = allowed & attn_mask
    shifted = energies - energies.max(-1, keepdim=True).values.detach()
    log_p = shifted - torch.log((torch.exp(shifted) * allowed).sum(-1, keepdim=True))
    log_p = torch.where(allowed, log_p, torch.tensor(float("-inf"), dtype=log_p.dtype))
    if single:
        log_p = log_p[:, 0]
    return AttentionOutput(log_p, log_p.exp()) if need_weights else log_p


def finite(out):
    """The allowed entries (the -inf of forbidden ones have no gradient to compare)."""
    return torch.where(torch.isinf(out), torch.zeros_like(out), out)


def test_pointer_matches_vinyals(device):
    torch.manual_seed(0)
    block = randomize_(create("pointer", D, 4, score_kwargs={"hidden": 7}), scale=0.5).double()
    query, keys = torch.randn(B, M, D).double(), torch.randn(B, N, 4).double()
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    chosen = torch.ones(B, M, N, dtype=torch.bool)
    chosen[:, 1, 0] = chosen[:, 2, :2] = False  # positions already pointed at
    for kwargs in ({"key_padding_mask": mask}, {"key_padding_mask": mask, "attn_mask": chosen}, {}):
        assert_matches_reference(
            block,
            lambda *a, **k: finite(pointer_reference(*a, **k)),
            query,
            keys,
            output=finite,
            device=device,
            **kwargs,
        )
    assert_matches_reference(
        block,
        lambda *a, **k: finite(pointer_reference(*a, **k)),
        query[:, 0],
        keys,
        key_padding_mask=mask,
        output=finite,
        device=device,
    )
    out = block(query, keys, key_padding_mask=mask, attn_mask=chosen, need_weights=True)
    assert torch.isinf(out.output[1, :, 3:]).all() and torch.isinf(out.output[:, 2, :2]).all()
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(B, M, dtype=torch.float64))


def test_an_ablated_pointer_points_uniformly():
    block = create("pointer", D).eval()
    query, keys, mask = torch.randn(1, 2, D), torch.randn(1, 4, D), torch.tensor([[True, True, True, False]])
    with torch.no_grad(), ablation(block, "uniform"), capture(block) as maps:
        log_p = block(query, keys, key_padding_mask=mask)
    torch.testing.assert_close(log_p[..., :3].exp(), torch.full((1, 2, 3), 1 / 3))
    assert maps["pointer"][0].weights.shape == (1, 2, 4)


def generator_reference(
    block,
    features,
    weights,
    source,
    vocab_logits,
    *,
    key_padding_mask=None,
    extended_vocab_size=None,
    need_weights=False,
):
    """P(w) = p_gen softmax(logits)_w + (1 - p_gen) sum_{i: x_i = w} a_i, the copy sum by loops."""
    b, m, vocab = vocab_logits.shape
    size = extended_vocab_size or vocab
    if key_padding_mask is not None:
        weights = weights * key_padding_mask[:, None]
    p_gen = torch.sigmoid(features @ block.gate.weight[0] + block.gate.bias[0])  # (B, M)
    p_vocab = torch.softmax(vocab_logits, -1)
    rows = []
    for e in range(b):
        for t in range(m):
            copy = [
                sum(
                    (weights[e, t, i] for i in range(source.shape[1]) if source[e, i] == w),
                    torch.zeros((), dtype=weights.dtype),
                )
                for w in range(size)
            ]
            generated = [p_vocab[e, t, w] if w < vocab else torch.zeros((), dtype=weights.dtype) for w in range(size)]
            rows.append(torch.stack([p_gen[e, t] * g + (1 - p_gen[e, t]) * c for g, c in zip(generated, copy)]))
    mixed = torch.stack(rows).reshape(b, m, size)
    log_p = mixed.clamp_min(torch.finfo(mixed.dtype).tiny).log()
    return AttentionOutput(log_p, weights) if need_weights else log_p


def test_pointer_generator_matches_see_et_al(device):
    torch.manual_seed(0)
    block = randomize_(create("pointer_generator", 7)).double()
    features, logits = torch.randn(B, M, 7).double(), torch.randn(B, M, 6).double()
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    weights = torch.softmax(torch.randn(B, M, N).masked_fill(~mask[:, None], -1e9), -1).double()
    source = torch.tensor([[4, 1, 4, 0, 2], [5, 5, 3, 0, 0]])
    assert_matches_reference(
        block, generator_reference, features, weights, source, logits, key_padding_mask=mask, device=device
    )
    extended = torch.tensor([[4, 6, 7, 0, 2], [5, 8, 3, 0, 0]])  # ids >= 6: source words outside the vocabulary
    assert_matches_reference(
        block,
        generator_reference,
        features,
        weights,
        extended,
        logits,
        key_padding_mask=mask,
        extended_vocab_size=9,
        device=device,
    )
    probs = block(features, weights, extended, logits, key_padding_mask=mask, extended_vocab_size=9).exp()
    torch.testing.assert_close(probs.sum(-1), torch.ones(B, M, dtype=torch.float64))
    assert (probs[0, :, 8] < 1e-30).all() and (probs[1, :, 8] > 0).all()  # only the second source holds id 8


def test_pointer_generator_checks_its_inputs():
    block = create("pointer_generator", 4)
    with pytest.raises(ValueError, match="extended_vocab_size=3 is smaller than the vocabulary"):
        block(
            torch.randn(1, 2, 4),
            torch.rand(1, 2, 3),
            torch.zeros(1, 3, dtype=torch.long),
            torch.randn(1, 2, 5),
            extended_vocab_size=3,
        )
    with pytest.raises(ValueError, match=r"source must have shape \(1, 3\)"):
        block(torch.randn(1, 2, 4), torch.rand(1, 2, 3), torch.zeros(1, 4, dtype=torch.long), torch.randn(1, 2, 5))
