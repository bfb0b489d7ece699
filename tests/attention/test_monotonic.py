"""Monotonic attention ("monotonic", "mocha", "monotonic_multi_head") against the papers'
recurrences written as loops over the keys (float64, outputs and gradients, with masks)."""

from __future__ import annotations

import math

import pytest
import torch

from framework.attention import AttentionOutput, capture, create
from framework.attention.cross.monotonic import chunkwise_weights, expected_alignment, hard_alignment
from tests.attention.reference import assert_matches_reference, randomize_

B, M, N, D = 2, 3, 6, 8


def lengths_mask(lengths: list[int], n: int = N) -> torch.Tensor:
    return torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]


def naive_expected(p: torch.Tensor, previous: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Raffel et al.'s recurrence, key by key: q_j = (1 - p_{j-1}) q_{j-1} + a_{i-1,j}, a_ij = p_ij q_ij.
    p (M, N), previous (N,), valid (N,) -> (M, N)."""
    p = p * valid
    rows = []
    for i in range(p.shape[0]):
        q, row = previous[0], []
        for j in range(p.shape[1]):
            if j:
                q = (1 - p[i, j - 1]) * q + previous[j]
            row.append(p[i, j] * q)
        previous = torch.stack(row)
        rows.append(previous)
    return torch.stack(rows)


def naive_hard(e: torch.Tensor, previous: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Test-time scan: from the previous stop, the first valid key with e >= 0; none -> zeros from then on."""
    n = e.shape[1]
    start = int(previous.argmax()) if previous.sum() > 0 else n
    rows = []
    for i in range(e.shape[0]):
        row = torch.zeros(n, dtype=e.dtype)
        for j in range(start, n):
            if valid[j] and e[i, j] >= 0:
                row[j], start = 1.0, j
                break
        else:
            start = n
        rows.append(row)
    return torch.stack(rows)


def naive_chunkwise(alpha: torch.Tensor, u: torch.Tensor, valid: torch.Tensor, w) -> torch.Tensor:
    """b_ij = sum_{k=j}^{j+w-1} a_ik exp(u_ij) / sum_{l=k-w+1}^{k} exp(u_il), invalid keys excluded."""
    m, n = alpha.shape
    exp = torch.exp(u) * valid
    beta = torch.zeros(m, n, dtype=u.dtype)
    for i in range(m):
        for j in range(n):
            last = n - 1 if w is None else min(j + w - 1, n - 1)
            for k in range(j, last + 1):
                first = 0 if w is None else max(0, k - w + 1)
                total = exp[i, first : k + 1].sum()
                if total > 0:
                    beta[i, j] = beta[i, j] + alpha[i, k] * exp[i, j] / total
    return beta


def naive_energies(score, head: int, bias, q, k) -> torch.Tensor:
    """Energies of one head from the score's parameters: q (M, dq), k (N, dk) -> (M, N)."""
    name = type(score).__name__
    if name in ("NormalisedAdditiveScore", "AdditiveScore"):
        hidden = torch.tanh(
            (q @ score.query_weight[head] + score.bias[head, 0])[:, None] + (k @ score.key_weight[head])[None]
        )
        v = score.out[head, :, 0]
        if name == "AdditiveScore":
            return hidden @ v + bias
        return score.gain[head, 0, 0] * hidden @ (v / v.norm()) + bias  # g v^T tanh(...) / |v| + r
    if name == "ScaledDotScore":
        return q @ k.T / math.sqrt(k.shape[-1]) + bias
    raise AssertionError(name)


def monotonic_reference(block, query, keys, values=None, *, key_padding_mask=None, state=None, need_weights=False):
    """Per example and head: naive energies, the recurrence, the chunk sums, then the outputs."""
    values = keys if values is None else values
    b, m, n, h = query.shape[0], query.shape[1], keys.shape[1], block.num_heads
    valid = torch.ones(b, n, dtype=torch.bool) if key_padding_mask is None else key_padding_mask
    if state is None:
        state = torch.zeros(b, h, n, dtype=query.dtype)
        state[..., 0] = 1.0

    def heads(x, maps, index):
        layer = maps[index] if isinstance(maps, torch.nn.ModuleList) else maps
        if isinstance(layer, torch.nn.Linear):
            x = x @ layer.weight.T + layer.bias
        return x.reshape(x.shape[0], x.shape[1], h, -1)

    qm, km = heads(query, block.query_maps, 0), heads(keys, block.key_maps, 0)
    qu, ku = heads(query, block.query_maps, 1), heads(keys, block.key_maps, 1)
    v = heads(values, block.v_proj, 0)
    weights = torch.zeros(b, h, m, n, dtype=query.dtype)
    for e in range(b):
        for head in range(h):
            energy = naive_energies(
                block.monotonic_energy, head, block.energy_bias[head, 0, 0], qm[e, :, head], km[e, :, head]
            )
            if block.hard is True:
                alpha = naive_hard(energy, state[e, head], valid[e])
            else:
                alpha = naive_expected(torch.sigmoid(energy), state[e, head], valid[e])
            if block.chunk_energy is None:
                weights[e, head] = alpha
            else:
                u = naive_energies(block.chunk_energy, head, 0.0, qu[e, :, head], ku[e, :, head])
                weights[e, head] = naive_chunkwise(alpha, u, valid[e], block.chunk_size)
    context = torch.einsum("bhmn,bnhd->bmhd", weights, v).reshape(b, m, -1)
    out = context
    if isinstance(block.out_proj, torch.nn.Linear):
        out = context @ block.out_proj.weight.T + block.out_proj.bias
    return AttentionOutput(out, weights) if need_weights else out


@pytest.mark.parametrize(
    "name, options",
    [
        ("monotonic", {}),
        ("mocha", {}),
        ("mocha", {"chunk_size": 3, "score": "scaled_dot"}),
        ("monotonic_multi_head", {"num_heads": 2}),
        ("monotonic_multi_head", {"num_heads": 2, "chunk_size": 2, "out_dim": 6}),
    ],
)
@pytest.mark.parametrize("hard", [False, True])
def test_monotonic_blocks_match_the_recurrences(name, options, hard, device):
    torch.manual_seed(0)
    block = randomize_(create(name, D, noise=0.0, hard=hard, **options), scale=0.5).double()
    with torch.no_grad():
        block.energy_bias.fill_(0.2)  # some keys above 0.5 and some below, so hard scans stop and move on
    query, keys = torch.randn(B, M, D).double(), torch.randn(B, N, D).double()
    mask = lengths_mask([6, 2])
    assert_matches_reference(block, monotonic_reference, query, keys, key_padding_mask=mask, device=device)
    if hard and block.chunk_energy is None:  # one-hot weights: nothing to differentiate
        got = block.to(device)(query.to(device), keys.to(device), key_padding_mask=mask.to(device), need_weights=True)
        want = monotonic_reference(block.cpu(), query, keys, key_padding_mask=mask, need_weights=True)
        torch.testing.assert_close(got.weights.cpu(), want.weights)
    else:
        assert_matches_reference(
            block,
            lambda *a, **k: monotonic_reference(*a, **k).weights,
            query,
            keys,
            key_padding_mask=mask,
            need_weights=True,
            output=lambda out: out.weights,
            device=device,
        )
    # one step from a given state (a decoder's per-step call), with separate values
    values = torch.randn(B, N, D).double()
    state = torch.softmax(torch.randn(B, block.num_heads, N), -1).double() * mask[:, None]
    if hard:
        state = torch.nn.functional.one_hot(torch.tensor([3, 1]), N).double()[:, None].repeat(1, block.num_heads, 1)
    assert_matches_reference(
        block, monotonic_reference, query[:, :1], keys, values, key_padding_mask=mask, state=state, device=device
    )


def test_the_parallel_forms_match_the_loops_on_long_confident_inputs():
    """p close to 1 makes the cumulative product of (1 - p) vanish: the log-space sum stays exact."""
    torch.manual_seed(0)
    energies = torch.randn(2, 3, 40, dtype=torch.float64) * 6 + 2
    previous = torch.softmax(torch.randn(2, 40, dtype=torch.float64), -1)
    valid = lengths_mask([40, 25], 40)
    got = expected_alignment(energies, previous, valid)
    for e in range(2):
        torch.testing.assert_close(got[e], naive_expected(torch.sigmoid(energies[e]), previous[e], valid[e]))
    assert torch.isfinite(got).all() and (got.sum(-1) <= 1 + 1e-9).all()
    hard = hard_alignment(energies, torch.nn.functional.one_hot(torch.tensor([2, 30]), 40).double(), valid)
    for e in range(2):
        start = torch.nn.functional.one_hot(torch.tensor([2, 30])[e], 40).double()
        torch.testing.assert_close(hard[e], naive_hard(energies[e], start, valid[e]))
    u = torch.randn(2, 3, 40, dtype=torch.float64) * 3
    for w in (1, 2, 5, None):
        beta = chunkwise_weights(got, u, valid, w)
        for e in range(2):
            torch.testing.assert_close(beta[e], naive_chunkwise(got[e], u[e], valid[e], w))


def test_gradients_stay_finite_from_a_state_with_zeros(device):
    block = create("mocha", D, noise=0.0, energy_bias=3.0).double().to(device)
    query, keys = (
        torch.randn(2, 5, D, dtype=torch.float64, device=device),
        torch.randn(2, 9, D, dtype=torch.float64, device=device),
    )
    state = torch.zeros(2, 1, 9, dtype=torch.float64, device=device)
    state[0, 0, 4], state[1, 0, 8] = 1.0, 1.0  # nothing before the start, and a start at the last key
    keys.requires_grad_()
    block(query, keys, key_padding_mask=lengths_mask([9, 9], 9).to(device), state=state).sum().backward()
    assert torch.isfinite(keys.grad).all() and all(torch.isfinite(p.grad).all() for p in block.parameters())


def test_monotonic_alignment_moves_forward_and_carries_over_calls():
    torch.manual_seed(0)
    block = create("monotonic", D, hard=True)
    query, keys = torch.randn(2, 6, D), torch.randn(2, 8, D)
    with torch.no_grad():
        block.energy_bias.fill_(0.5)
        all_at_once = block.attend(query, keys)
        state, steps = None, []
        for i in range(6):  # a decoder's steps, one call each, threading the state
            context, weights, state = block.attend(query[:, i : i + 1], keys, state=state)
            steps.append(weights)
    torch.testing.assert_close(torch.cat(steps, dim=2), all_at_once.weights)
    positions = all_at_once.weights[:, 0].argmax(-1)
    chosen = all_at_once.weights[:, 0].sum(-1) > 0
    for e in range(2):
        stops = positions[e][chosen[e]]
        assert (stops[1:] >= stops[:-1]).all(), "a hard monotonic alignment never moves back"


def test_training_uses_the_expectation_and_evaluation_the_hard_scan():
    torch.manual_seed(0)
    block = create("mocha", D, noise=0.0, energy_bias=0.0)
    query, keys = torch.randn(2, 3, D), torch.randn(2, 6, D)
    soft = block(query, keys, need_weights=True).weights
    hard = block.eval()(query, keys, need_weights=True).weights
    assert (soft > 0).all() and ((hard > 0).sum(-1) <= block.chunk_size).all()  # a chunk of w keys at most
    with capture(block) as maps:
        block(query, keys)
    assert maps["mocha"][0].weights.shape == (2, 1, 3, 6) and maps["mocha"][0].keys == (6,)


def test_monotonic_options_are_checked():
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        create("mocha", D, chunk_size=0)
    with pytest.raises(ValueError, match="state must have shape"):
        create("mocha", D)(torch.randn(2, 3, D), torch.randn(2, 5, D), state=torch.zeros(2, 5))
