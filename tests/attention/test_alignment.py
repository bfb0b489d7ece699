"""Location-aware attention ("location_aware") and GRU-gated attention ("gru_gated") against
their papers' equations written out by hand (float64, outputs and gradients, with masks)."""

from __future__ import annotations

import pytest
import torch

from framework.attention import AttentionOutput, ablation, create
from tests.attention.reference import assert_matches_reference, randomize_

B, M, N, D, DK = 2, 3, 6, 8, 5


def lengths_mask(lengths: list[int], n: int = N) -> torch.Tensor:
    return torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]


def masked_softmax(e: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    z = torch.exp(e - e.max()) * valid
    return z / z.sum()


def location_reference(block, query, keys, values=None, *, key_padding_mask=None, state=None, need_weights=False):
    """Chorowski et al., eqs. (5)-(9): f = F * a_{i-1} (a loop over taps), e = w^T tanh(W s + V h + U f + b)."""
    values = keys if values is None else values
    single = query.dim() == 2
    query = query.unsqueeze(1) if single else query
    b, m, n = query.shape[0], query.shape[1], keys.shape[1]
    valid = torch.ones(b, n, dtype=torch.bool) if key_padding_mask is None else key_padding_mask
    taps = block.conv.weight[:, 0]  # (k, r)
    r = taps.shape[1]
    out, weights = [], []
    for e in range(b):
        previous = valid[e].double() / valid[e].sum() if state is None else state[e]
        rows = []
        for i in range(m):
            padded = torch.cat(
                [torch.zeros(r // 2, dtype=query.dtype), previous, torch.zeros(r // 2, dtype=query.dtype)]
            )
            f = torch.stack(
                [torch.stack([(taps[c] * padded[j : j + r]).sum() for c in range(taps.shape[0])]) for j in range(n)]
            )  # (N, k)
            hidden = torch.tanh(
                query[e, i] @ block.query_proj.weight.T
                + block.query_proj.bias
                + keys[e] @ block.key_proj.weight.T
                + f @ block.location_proj.weight.T
            )
            energies = hidden @ block.energy.weight[0]
            if block.distribution == "smoothing":
                smooth = torch.sigmoid(energies) * valid[e]
                previous = smooth / smooth.sum()
            else:
                previous = masked_softmax(block.sharpening * energies, valid[e])
            rows.append(previous)
        weights.append(torch.stack(rows))
        out.append(weights[-1] @ values[e])
    out, weights = torch.stack(out), torch.stack(weights)
    if single:
        out, weights = out[:, 0], weights[:, 0]
    return AttentionOutput(out, weights) if need_weights else out


@pytest.mark.parametrize("options", [{}, {"distribution": "smoothing"}, {"sharpening": 2.0, "value_dim": 4}])
def test_location_aware_matches_chorowski(options, device):
    torch.manual_seed(0)
    block = randomize_(
        create("location_aware", D, DK, hidden=6, filters=3, kernel_size=5, **options), scale=0.5
    ).double()
    query, keys, mask = torch.randn(B, M, D).double(), torch.randn(B, N, DK).double(), lengths_mask([6, 3])
    values = torch.randn(B, N, block.value_dim).double()
    assert_matches_reference(block, location_reference, query, keys, values, key_padding_mask=mask, device=device)
    assert_matches_reference(
        block,
        lambda *a, **k: location_reference(*a, **k).weights,
        query,
        keys,
        values,
        key_padding_mask=mask,
        need_weights=True,
        output=lambda out: out.weights,
        device=device,
    )
    state = masked_softmax(torch.randn(B, N).double(), mask)  # a decoder's step from its previous alignment
    assert_matches_reference(
        block, location_reference, query[:, 0], keys, values, key_padding_mask=mask, state=state, device=device
    )


def test_the_location_term_moves_the_alignment_and_steps_thread_the_state():
    torch.manual_seed(0)
    block = create("location_aware", D, kernel_size=3)
    query, keys = torch.randn(2, 4, D), torch.randn(2, N, D)
    with torch.no_grad():
        whole = block.attend(query, keys)
        state, steps = None, []
        for i in range(4):
            _, weights, state = block.attend(query[:, i : i + 1], keys, state=state)
            steps.append(weights)
        torch.testing.assert_close(torch.cat(steps, dim=1), whole.weights)
        torch.testing.assert_close(whole.state, whole.weights[:, -1])
        first = torch.zeros(2, N)
        first[:, 0] = 1.0
        last = torch.zeros(2, N)
        last[:, -1] = 1.0
        assert not torch.allclose(block(query[:, 0], keys, state=first), block(query[:, 0], keys, state=last))


def gru_gated_reference(block, query, keys, *, key_padding_mask=None, need_weights=False):
    """GAtt: h' = GRU(input s_i, history h_j) with the GRU equations written out; additive score."""
    w_ih, w_hh, b_ih, b_hh = block.gate.weight_ih, block.gate.weight_hh, block.gate.bias_ih, block.gate.bias_hh
    dk = keys.shape[-1]
    single = query.dim() == 2
    query = query.unsqueeze(1) if single else query
    gi = query @ w_ih.T + b_ih  # (B, M, 3 Dk): input terms
    gh = keys @ w_hh.T + b_hh  # (B, N, 3 Dk): history terms
    reset = torch.sigmoid(gi[..., None, :dk] + gh[:, None, :, :dk])
    update = torch.sigmoid(gi[..., None, dk : 2 * dk] + gh[:, None, :, dk : 2 * dk])
    candidate = torch.tanh(gi[..., None, 2 * dk :] + reset * gh[:, None, :, 2 * dk :])
    gated = (1 - update) * candidate + update * keys[:, None]  # (B, M, N, Dk)
    s = block.score
    hidden = torch.tanh((query @ s.query_weight[0] + s.bias[0, 0])[:, :, None] + gated @ s.key_weight[0])
    energies = hidden @ s.out[0, :, 0]  # (B, M, N)
    valid = torch.ones(keys.shape[:2], dtype=torch.bool) if key_padding_mask is None else key_padding_mask
    weights = torch.stack(
        [
            torch.stack([masked_softmax(energies[b, i], valid[b]) for i in range(energies.shape[1])])
            for b in range(energies.shape[0])
        ]
    )
    out = torch.einsum("bmn,bmnd->bmd", weights, gated)
    if single:
        out, weights = out[:, 0], weights[:, 0]
    return AttentionOutput(out, weights) if need_weights else out


def test_gru_gated_matches_the_gatt_equations(device):
    torch.manual_seed(0)
    block = randomize_(create("gru_gated", D, DK, score_kwargs={"hidden": 7}), scale=0.5).double()
    query, keys, mask = torch.randn(B, M, D).double(), torch.randn(B, N, DK).double(), lengths_mask([6, 2])
    assert_matches_reference(block, gru_gated_reference, query, keys, key_padding_mask=mask, device=device)
    assert_matches_reference(
        block,
        lambda *a, **k: gru_gated_reference(*a, **k).weights,
        query,
        keys,
        key_padding_mask=mask,
        need_weights=True,
        output=lambda out: out.weights,
        device=device,
    )
    assert_matches_reference(block, gru_gated_reference, query[:, 1], keys, key_padding_mask=mask, device=device)


def test_gated_contexts_differ_between_queries_where_plain_ones_cannot():
    """With uniform weights, plain attention gives every query the same context; GAtt does not."""
    torch.manual_seed(0)
    block = create("gru_gated", D).eval()
    query, keys = torch.randn(1, 3, D), torch.randn(1, N, D)
    with torch.no_grad(), ablation(block, "uniform"):
        contexts = block(query, keys)
    assert (contexts[0, 0] - contexts[0, 1]).abs().max() > 1e-3


def test_wrong_options_and_shapes_are_named():
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        create("location_aware", D, kernel_size=4)
    with pytest.raises(ValueError, match="distribution must be one of"):
        create("location_aware", D, distribution="sparsemax")
    with pytest.raises(ValueError, match="unknown score function 'addtive'"):
        create("gru_gated", D, score="addtive")
    with pytest.raises(ValueError, match=r"location_aware: keys must have shape \(2, N, 8\)"):
        create("location_aware", D)(torch.randn(2, 3, D), torch.randn(2, 5, 4))
