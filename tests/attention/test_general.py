"""The general attention model against formulas written out by hand.

Each score function is re-derived with einsums over the parameters, each distribution with
its definition (sparsemax by bisection on its threshold), and the composition (heads,
projections, hops, multi-dimensional output) by explicit loops.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from framework.attention import Attention, ShapeError, capture, create
from framework.attention.cross import distribution as dist_module
from tests.attention.reference import assert_matches_reference, randomize_

B, M, N, DQ, DK, DV = 2, 3, 5, 6, 4, 7


def _inputs(seed: int = 0, dk: int = DK, dv: int = DV):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, M, DQ, generator=g)
    k = torch.randn(B, N, dk, generator=g)
    v = torch.randn(B, N, dv, generator=g)
    mask = torch.ones(B, N, dtype=torch.bool)
    mask[1, 3:] = False  # the second example has two padded keys
    return q, k, v, mask


def _energies(block: Attention, q, k):
    """score(q, k) per head from the definitions; q (B, h, M, dq), k (B, h, N, dk)."""
    s = block.score
    name = type(s).__name__
    if name == "DotScore":
        return torch.einsum("bhmi,bhni->bhmn", q, k)
    if name == "ScaledDotScore":
        return torch.einsum("bhmi,bhni->bhmn", q, k) / math.sqrt(k.shape[-1])
    if name == "GeneralScore":  # q^T W k
        return torch.einsum("bhmi,hij,bhnj->bhmn", q, s.weight, k)
    if name == "BiasedGeneralScore":  # k^T (W q + b)
        wq = torch.einsum("hji,bhmi->bhmj", s.weight, q) + s.bias.unsqueeze(0)
        return torch.einsum("bhmj,bhnj->bhmn", wq, k)
    if name == "ActivatedGeneralScore":  # tanh(k^T W q + b)
        return torch.tanh(torch.einsum("bhnj,hji,bhmi->bhmn", k, s.weight, q) + s.bias.unsqueeze(0))
    if name in ("AdditiveScore", "ConcatScore"):  # w^T tanh(W1 q + W2 k + b)
        if name == "ConcatScore":
            wq, wk = s.weight[:, : q.shape[-1]], s.weight[:, q.shape[-1] :]
        else:
            wq, wk = s.query_weight, s.key_weight
        hidden = torch.tanh(
            torch.einsum("bhmi,hid->bhmd", q, wq)[:, :, :, None]
            + torch.einsum("bhnj,hjd->bhnd", k, wk)[:, :, None]
            + s.bias[None, :, None]
        )
        e = torch.einsum("bhmnd,hdo->bhmno", hidden, s.out)
        return e if s.value_dim else e[..., 0]
    if name == "LocationScore":  # W q + b, the first N positions
        return (torch.einsum("bhmi,hil->bhml", q, s.weight) + s.bias.unsqueeze(0))[..., : k.shape[-2]]
    if name == "CosineScore":
        cos = torch.einsum("bhmi,bhni->bhmn", q, k) / (q.norm(dim=-1)[..., None] * k.norm(dim=-1)[..., None, :])
        return s.temperature * cos
    if name == "KernelScore":
        phi = lambda x: torch.where(x > 0, x + 1, torch.exp(x))  # elu(x) + 1
        return torch.einsum("bhmi,bhni->bhmn", phi(q), phi(k))
    raise AssertionError(name)


def _softmax(e, mask, dim=-1):
    z = torch.exp(e - e.max(dim, keepdim=True).values) * mask
    total = z.sum(dim, keepdim=True)
    return torch.where(total > 0, z / total.clamp_min(1e-300), torch.zeros_like(z))


def _reference(
    block: Attention, query, key=None, value=None, *, key_padding_mask=None, attn_mask=None, need_weights=False
):
    key = query if key is None else key
    value = key if value is None else value
    h = block.num_heads

    def heads(x, proj):
        if isinstance(proj, torch.nn.Linear):
            x = x @ proj.weight.T + proj.bias
        return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(1, 2)

    k, v = heads(key, block.k_proj), heads(value, block.v_proj)
    mask = torch.ones(query.shape[0], 1, query.shape[1], key.shape[1], dtype=torch.bool)
    if key_padding_mask is not None:
        mask = mask & key_padding_mask[:, None, None, :]
    if attn_mask is not None:
        mask = mask & attn_mask
    if block.causal:
        mask = mask & torch.ones(query.shape[1], key.shape[1], dtype=torch.bool).tril()
    for hop in range(block.hops):
        if hop:
            query = query + out  # noqa: F821 (out: the previous hop's, assigned at the end of this loop)
        q = heads(query, block.q_proj)
        e = _energies(block, q, k)
        kind = type(block.distribution).__name__
        if block.multi_dimensional:
            a = _softmax(e, mask.unsqueeze(-1), dim=-2)
            c = torch.einsum("bhmnd,bhnd->bhmd", a, v)
        else:
            if kind == "Softmax":
                a = _softmax(e, mask)
            elif kind == "Sigmoid":
                a = torch.sigmoid(e) * mask
            elif kind == "Normalize":
                a = e * mask / ((e * mask).sum(-1, keepdim=True) + 1e-6)
            else:
                raise AssertionError(kind)
            c = torch.einsum("bhmn,bhnd->bhmd", a, v)
        out = c.transpose(1, 2).reshape(c.shape[0], c.shape[2], -1)
        if isinstance(block.out_proj, torch.nn.Linear):
            out = out @ block.out_proj.weight.T + block.out_proj.bias
    return out


SCORES = [
    "additive",
    "dot",
    "scaled_dot",
    "general",
    "biased_general",
    "activated_general",
    "concat",
    "location",
    "cosine",
    "kernel",
]


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("num_heads", [1, 2])
def test_every_score_matches_its_formula(score, num_heads, device):
    """Projected (transformer style) attention with each score, with key padding."""
    distribution = "normalize" if score == "kernel" else "softmax"
    block = randomize_(Attention(DQ, DK, DV, score=score, distribution=distribution, num_heads=num_heads, head_dim=4))
    q, k, v, mask = _inputs()
    assert_matches_reference(block, _reference, q, k, v, key_padding_mask=mask, device=device)
    assert_matches_reference(
        block, _reference, q, k, v, key_padding_mask=mask, need_weights=True, output=lambda o: o.output, device=device
    )


@pytest.mark.parametrize("score", ["additive", "general", "biased_general", "activated_general", "concat", "location"])
def test_unprojected_scores_take_queries_and_keys_of_different_sizes(score, device):
    """Bahdanau/Luong style: raw features scored, values averaged, output has Dv features."""
    block = randomize_(Attention(DQ, DK, DV, score=score, project=False))
    q, k, v, mask = _inputs()
    assert_matches_reference(block, _reference, q, k, v, key_padding_mask=mask, device=device)


@pytest.mark.parametrize("distribution", ["softmax", "sigmoid"])
def test_distributions_with_explicit_and_causal_masks(distribution, device):
    block = randomize_(Attention(DQ, score="general", distribution=distribution, num_heads=2, causal=True))
    q, _, _, mask = _inputs()
    x = torch.randn(B, M, DQ)
    attn_mask = torch.tensor([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=torch.bool)
    assert_matches_reference(block, _reference, x, key_padding_mask=mask[:, :M], attn_mask=attn_mask, device=device)


def test_multi_hop_adds_each_output_to_the_query(device):
    block = randomize_(Attention(DQ, DK, DV, score="additive", hops=3))
    q, k, v, mask = _inputs()
    assert_matches_reference(block, _reference, q, k, v, key_padding_mask=mask, device=device)


def test_multi_dimensional_attention_weighs_every_value_feature(device):
    for score in ("additive", "concat"):
        block = randomize_(Attention(DQ, DK, DV, score=score, multi_dimensional=True, num_heads=2, head_dim=3))
        q, k, v, mask = _inputs()
        assert_matches_reference(block, _reference, q, k, v, key_padding_mask=mask, device=device)
        weights = block.float()(q, k, v, key_padding_mask=mask, need_weights=True).weights
        assert weights.shape == (B, 2, M, N, 3)
        torch.testing.assert_close(weights.sum(-2), torch.ones(B, 2, M, 3))  # softmax over keys, per feature


def _sparsemax_by_bisection(z: torch.Tensor) -> torch.Tensor:
    """p = max(z - tau, 0) with tau solving sum(p) = 1, found by bisection (float64)."""
    lo, hi = z.min(-1, keepdim=True).values - 1, z.max(-1, keepdim=True).values
    for _ in range(200):
        tau = (lo + hi) / 2
        over = (z - tau).clamp(min=0).sum(-1, keepdim=True) > 1
        lo, hi = torch.where(over, tau, lo), torch.where(over, hi, tau)
    return (z - (lo + hi) / 2).clamp(min=0)


def test_sparsemax_is_the_euclidean_projection_onto_the_simplex():
    e = torch.randn(4, 3, 9, dtype=torch.float64) * 2
    mask = torch.rand(4, 3, 9) > 0.3
    mask[0, 0] = False  # a query with no key left
    got, _ = dist_module.Sparsemax()(e, mask)
    want = torch.stack(
        [
            torch.stack(
                [
                    torch.zeros(9, dtype=torch.float64).masked_scatter(m, _sparsemax_by_bisection(row[m]))
                    if m.any()
                    else torch.zeros(9, dtype=torch.float64)
                    for row, m in zip(e_b, m_b)
                ]
            )
            for e_b, m_b in zip(e, mask)
        ]
    )
    torch.testing.assert_close(got, want, atol=1e-9, rtol=0)
    assert (got == 0).any(), "sparsemax should give exact zeros"


def test_sparsemax_gradient_is_its_jacobian():
    e = torch.randn(3, 7, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, :2] = False
    assert torch.autograd.gradcheck(lambda x: dist_module.Sparsemax()(x, mask)[0], (e,))
    block = randomize_(Attention(DQ, DK, DV, distribution="sparsemax")).float()
    q, k, v, pad = _inputs()
    out = block(q, k, v, key_padding_mask=pad, need_weights=True)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(B, 1, M))
    assert (out.weights[1, ..., 3:] == 0).all()


def test_hard_attention_picks_one_key_and_passes_softmax_gradients():
    torch.manual_seed(0)
    block = randomize_(Attention(DQ, DK, DV, score="general", distribution="hard", project=False)).double().eval()
    q, k, v, mask = (t.double() if t.is_floating_point() else t for t in _inputs())
    q.requires_grad_()
    out = block(q, k, v, key_padding_mask=mask, need_weights=True)
    e = _energies(block, q.unsqueeze(1), k.unsqueeze(1))
    p = _softmax(e, mask[:, None, None, :])
    choice = p.argmax(-1)  # eval mode: the most likely key
    assert torch.equal(out.weights, F.one_hot(choice, N).double())
    torch.testing.assert_close(out.output, torch.einsum("bhmn,bnd->bmd", out.weights, v))
    torch.testing.assert_close(out.log_prob, p.gather(-1, choice.unsqueeze(-1)).squeeze(-1).log())
    # straight-through: d(out)/dq equals that of the soft weights
    cot = torch.randn_like(out.output)
    (g_hard,) = torch.autograd.grad(out.output, q, cot)
    (g_soft,) = torch.autograd.grad(torch.einsum("bhmn,bnd->bmd", p, v), q, cot)
    torch.testing.assert_close(g_hard, g_soft)


def test_hard_attention_samples_from_the_softmax_while_training():
    torch.manual_seed(0)
    e = torch.tensor([[0.0, 1.0, 2.0, -1.0]]).expand(20000, 4)
    mask = torch.tensor([True, True, True, False])
    weights, log_prob = dist_module.Hard().train()(e, mask)
    freq = weights.mean(0)
    want = _softmax(e[:1], mask)[0]
    torch.testing.assert_close(freq, want, atol=0.015, rtol=0)
    assert (weights[:, 3] == 0).all()
    torch.testing.assert_close(log_prob, (weights * want.log().where(mask, 0)).sum(-1))


@pytest.mark.parametrize("score", ["dot", "scaled_dot", "general", "biased_general", "cosine"])
def test_fused_sdpa_path_equals_the_explicit_path(score, monkeypatch):
    """Dot-product scores with softmax run through scaled_dot_product_attention unless weights are wanted."""
    calls = []
    sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **kw: calls.append(1) or sdpa(*a, **kw))
    block = randomize_(Attention(8, score=score, num_heads=2, causal=True)).double()
    x = torch.randn(B, 6, 8, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(B, 6, dtype=torch.bool)
    mask[0, 4:] = False
    mask[1, :] = False  # fully padded: zeros, like the explicit path
    for kwargs in ({}, {"key_padding_mask": mask}):
        fast = block(x, **kwargs)
        assert calls, "the fused kernel was not used"
        calls.clear()
        slow = block(x, need_weights=True, **kwargs).output
        assert not calls
        torch.testing.assert_close(fast, slow)
        cot = torch.randn_like(fast)
        for g1, g2 in zip(
            torch.autograd.grad(fast, [x, *block.parameters()], cot),
            torch.autograd.grad(slow, [x, *block.parameters()], cot),
        ):
            torch.testing.assert_close(g1, g2)
    assert not torch.isnan(block(x, key_padding_mask=mask)).any()


@pytest.mark.parametrize("causal", [False, True])
def test_kernel_attention_linear_path_equals_the_explicit_path(causal, device):
    block = randomize_(Attention(8, score="kernel", distribution="normalize", num_heads=2, causal=causal)).double()
    x = torch.randn(B, 6, 8, dtype=torch.float64)
    mask = torch.ones(B, 6, dtype=torch.bool)
    mask[0, 4:] = False
    torch.testing.assert_close(
        block(x, key_padding_mask=mask), block(x, key_padding_mask=mask, need_weights=True).output
    )
    assert_matches_reference(block, _reference, x, key_padding_mask=mask, device=device)


@pytest.mark.parametrize("distribution", ["softmax", "sparsemax", "sigmoid", "hard", "normalize"])
def test_a_query_with_no_key_gets_zeros_not_nan(distribution):
    score = "kernel" if distribution == "normalize" else "general"
    block = Attention(DQ, DK, DV, score=score, distribution=distribution)
    q, k, v, mask = _inputs()
    mask[0] = False
    out = block(q, k, v, key_padding_mask=mask, need_weights=True)
    assert torch.equal(out.weights[0], torch.zeros_like(out.weights[0]))
    assert not torch.isnan(out.output).any()
    out.output.sum().backward()
    assert all(not torch.isnan(p.grad).any() for p in block.parameters() if p.grad is not None)


def test_single_query_vector_gives_vectors():
    block = create("additive", DQ, DK)
    q, k, _, mask = _inputs()
    out = block(q[:, 0], k, key_padding_mask=mask, need_weights=True)
    assert out.output.shape == (B, DK) and out.weights.shape == (B, 1, N)
    torch.testing.assert_close(out.output, block(q[:, :1], k, key_padding_mask=mask)[:, 0])


def test_capture_records_every_hop_and_nothing_outside():
    block = create("multi_hop", DQ)
    x = torch.randn(B, M, DQ)
    block(x)
    with capture(block) as maps:
        block(x)
    (name,) = maps
    first = maps[name][0]
    assert name == "multi_hop" and len(maps[name]) == 2 and first.weights.shape == (B, 1, M, M)
    assert not first.weights.requires_grad and first.queries == first.keys == (M,)


def test_errors_name_the_block_the_tensor_and_the_shapes():
    block = create("scaled_dot", 8)
    with pytest.raises(ShapeError, match=r"scaled_dot: query must have shape \(B, M, 8\), got \(2, 3, 5\)"):
        block(torch.randn(2, 3, 5))
    with pytest.raises(ShapeError, match=r"key_padding_mask must have shape \(2, 4\), got \(2, 3\)"):
        block(torch.randn(2, 4, 8), key_padding_mask=torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"unknown score function 'adittive'; did you mean: additive"):
        Attention(8, score="adittive")
    with pytest.raises(ValueError, match=r"unknown distribution function 'softmx'; did you mean: softmax"):
        Attention(8, distribution="softmx")
    with pytest.raises(ValueError, match="multi_dimensional needs a feature-wise score"):
        Attention(8, score="dot", multi_dimensional=True)
    with pytest.raises(ValueError, match="hops=2 adds the output to the query"):
        Attention(8, 4, 6, project=False, hops=2)
    with pytest.raises(ValueError, match="attn_mask must be boolean"):
        block(torch.randn(2, 3, 8), attn_mask=torch.zeros(3, 3))


def test_causal_mask_built_during_inference_serves_training_later():
    """Lightning's sanity check runs in inference mode before the first training step."""
    block = Attention(8, num_heads=2, causal=True)
    x = torch.randn(2, 11, 8)
    with torch.inference_mode():
        block(x, need_weights=True)
    block(x, need_weights=True).output.sum().backward()
    assert block.q_proj.weight.grad is not None


PRESETS = [
    "attention",
    "additive",
    "dot",
    "scaled_dot",
    "general",
    "biased_general",
    "activated_general",
    "concat",
    "location",
    "cosine",
    "kernel",
    "sigmoid",
    "multi_dimensional",
    "multi_head",
    "multi_hop",
]


@pytest.mark.parametrize("name", PRESETS)
def test_catalogue_presets_match_the_formulas(name, device):
    """Each catalogue entry of the general model, built by name, as self-attention with padding."""
    block = randomize_(create(name, 8))
    x = torch.randn(B, 6, 8)
    mask = torch.ones(B, 6, dtype=torch.bool)
    mask[0, 4:] = False
    assert_matches_reference(block, _reference, x, key_padding_mask=mask, device=device)


def test_dropout_acts_on_the_weights_only_while_training():
    torch.manual_seed(0)
    block = Attention(8, num_heads=2, dropout=0.5)
    x = torch.randn(2, 6, 8)
    reference = block.eval()(x)
    block.train()
    assert not torch.allclose(block(x), reference), "the fused path drops weights while training"
    dropped = block(x, need_weights=True)
    assert not torch.allclose(dropped.output, reference), "so does the explicit path"
    torch.testing.assert_close(dropped.weights.sum(-1), torch.ones(2, 2, 6))  # returned weights are pre-dropout
    block.dropout = 0.0
    torch.testing.assert_close(block(x), reference)
