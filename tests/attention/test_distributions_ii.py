"""Sparse entmax (alpha = 1.5 and alpha learned per head) and quasi-attention (CoDA) against the
entmax package row by row and formulas written out by hand (outputs and gradients, float64).

The block references project queries and keys themselves, run the distribution on each
query's valid keys alone (so masking is checked, not assumed) and sum the values.
"""

from __future__ import annotations

import math

import pytest
import torch
from entmax import entmax15, entmax_bisect

from framework.attention import Attention, create
from framework.attention.cross.distribution import AdaptiveEntmax, Entmax15, Quasi
from tests.attention.reference import assert_matches_reference, randomize_

B, M, N, D, H = 3, 4, 6, 8, 2


def _inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    query, keys = torch.randn(B, M, D, generator=g), torch.randn(B, N, D, generator=g)
    mask = torch.arange(N)[None, :] < torch.tensor([[N], [3], [0]])  # full, three keys, none
    return query, keys, mask


def _heads(x, linear):
    """(B, L, D) -> (B, h, L, d) through a projection's parameters."""
    return (x @ linear.weight.T + linear.bias).reshape(x.shape[0], x.shape[1], H, -1).transpose(1, 2)


def row_by_row(weights_of):
    """A reference of a cross block whose weights over each query's valid keys are
    ``weights_of(block, q (d,), k (n, d), head)``."""

    def reference(block, query, keys, *, key_padding_mask, need_weights=False):
        q, k, v = _heads(query, block.q_proj), _heads(keys, block.k_proj), _heads(keys, block.v_proj)
        weights = torch.zeros(B, H, M, N, dtype=query.dtype)
        for b in range(B):
            valid = key_padding_mask[b].nonzero().flatten()
            if not len(valid):
                continue
            for h in range(H):
                for m in range(M):
                    weights[b, h, m, valid] = weights_of(block, q[b, h, m], k[b, h, valid], h)
        out = (weights @ v).transpose(1, 2).flatten(2) @ block.out_proj.weight.T + block.out_proj.bias
        return (out, weights) if need_weights else out

    return reference


def entmax15_row(block, q, k, head):
    return entmax15(k @ q / math.sqrt(q.shape[-1]), dim=-1)


def adaptive_row(block, q, k, head):
    alpha = 1.01 + 0.99 * torch.sigmoid(block.distribution.alpha_logit[head])
    return entmax_bisect(k @ q / math.sqrt(q.shape[-1]), alpha, dim=-1, n_iter=50)


def quasi_row(block, q, k, head):
    scale = math.sqrt(q.shape[-1])
    return torch.tanh(k @ q / scale) * torch.sigmoid(-(k - q).abs().sum(-1) / scale)


@pytest.mark.parametrize(
    "name, row", [("entmax15", entmax15_row), ("adaptive_entmax", adaptive_row), ("quasi_attention", quasi_row)]
)
def test_sparse_and_quasi_presets_match_the_package_and_the_formula(name, row, device):
    block = randomize_(create(name, D, num_heads=H), scale=0.6)
    if name == "adaptive_entmax":  # two different, learnable alphas
        block.distribution.alpha_logit.data = torch.tensor([-1.0, 1.2])
    query, keys, mask = _inputs()
    reference = row_by_row(row)
    assert_matches_reference(block, reference, query, keys, key_padding_mask=mask, device=device)
    assert_matches_reference(
        block,
        lambda *a, **k: reference(*a, **k)[1],
        query,
        keys,
        key_padding_mask=mask,
        need_weights=True,
        output=lambda out: out.weights,
        device=device,
    )


def _kkt(p: torch.Tensor, z: torch.Tensor, alpha: float) -> None:
    """p is alpha-entmax(z): p_i = [(alpha - 1) z_i - tau]_+^(1 / (alpha - 1)) for one tau, sum 1."""
    torch.testing.assert_close(p.sum(-1), torch.ones_like(p[..., 0]))
    support = p > 0
    tau = (alpha - 1) * z - p.clamp_min(1e-300) ** (alpha - 1)  # equal on the support
    for _row_p, row_s, row_t, row_z in zip(
        p.flatten(0, -2), support.flatten(0, -2), tau.flatten(0, -2), z.flatten(0, -2)
    ):
        t = row_t[row_s]
        torch.testing.assert_close(t, t[:1].expand_as(t))
        assert ((alpha - 1) * row_z[~row_s] <= t[0] + 1e-12).all(), "an entry left out is above the threshold"


def test_entmax_distributions_are_sparse_normalised_and_drop_masked_keys():
    torch.manual_seed(0)
    e = torch.randn(2, H, 3, 7, dtype=torch.float64) * 3
    mask = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    mask[1, ..., 4:] = False
    mask[0, ..., 0] = False
    p15 = Entmax15()(e, mask)[0]
    adaptive = AdaptiveEntmax(H).double()
    adaptive.alpha_logit.data = torch.tensor([-2.0, 2.0], dtype=torch.float64)
    p_alpha = adaptive(e, mask)[0]
    for p, alphas in ((p15, [1.5, 1.5]), (p_alpha, adaptive.alpha.tolist())):
        assert torch.equal(p * ~mask, torch.zeros_like(p)), "masked keys get exactly zero"
        assert (p[mask.expand_as(p)] == 0).any(), "some allowed keys get exactly zero: sparse"
        for h, alpha in enumerate(alphas):  # the definition on the allowed keys of every row
            _kkt(p[0, h, :, 1:], e[0, h, :, 1:], alpha)
            _kkt(p[1, h, :, :4], e[1, h, :, :4], alpha)
    empty = torch.zeros(1, 1, 1, 7, dtype=torch.bool)
    assert torch.equal(Entmax15()(e[:1], empty)[0], torch.zeros_like(e[:1]))


def test_learned_alpha_gets_a_gradient_and_moves_sparsity():
    adaptive = AdaptiveEntmax(H)
    torch.testing.assert_close(adaptive.alpha, torch.full((H,), 1.5))
    e = torch.randn(2, H, 3, 9)
    (adaptive(e, None)[0] * torch.randn(2, H, 3, 9)).sum().backward()
    assert adaptive.alpha_logit.grad is not None and adaptive.alpha_logit.grad.abs().sum() > 0
    adaptive.alpha_logit.data = torch.tensor([-8.0, 8.0])  # alpha near 1 (dense) and near 2 (sparse)
    p = adaptive(e * 4, None)[0]
    assert (p[:, 0] > 0).float().mean() > (p[:, 1] > 0).float().mean()


def test_quasi_weights_lie_in_minus_one_one_and_subtract():
    block = randomize_(create("quasi_attention", D, num_heads=H))
    query, keys, mask = _inputs()
    weights = block(query, keys, key_padding_mask=mask, need_weights=True).weights
    assert weights.abs().max() < 1 and (weights < 0).any() and (weights > 0).any()
    assert not weights[2].any() and not weights[1, ..., 3:].any()
    assert not Quasi.normalised and Quasi.pairs


def test_pair_scores_and_pair_distributions_go_together():
    with pytest.raises(ValueError, match=r"distribution 'quasi' and score 'scaled_dot' do not fit"):
        Attention(D, distribution="quasi")
    with pytest.raises(ValueError, match=r"distribution 'softmax' and score 'coda' do not fit.*\['coda'\]"):
        Attention(D, score="coda")
