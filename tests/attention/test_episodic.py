"""The DMN episodic memory against DMN+'s equations written per example, pass and fact
(gate features, two-layer gate, softmax over the real facts, attention GRU, memory updates)."""

from __future__ import annotations

import pytest
import torch

from framework.attention import ShapeError, capture, create
from framework.attention.memory import EpisodicMemory
from tests.attention.reference import assert_matches_reference, randomize_

B, N, D = 3, 5, 4


def linear(layer, x):
    return x @ layer.weight.T + layer.bias


def attention_gru(gru, facts, gates):
    """h_i = g_i h~_i + (1 - g_i) h_{i-1}, h~_i = tanh(W f_i + b + r_i * (U h_{i-1} + c))."""
    w_r, w = gru.inputs.weight.chunk(2)
    b_r, b = gru.inputs.bias.chunk(2)
    u_r, u = gru.hidden.weight.chunk(2)
    c_r, c = gru.hidden.bias.chunk(2)
    h = torch.zeros(facts.shape[1], dtype=facts.dtype)
    for f, g in zip(facts, gates):
        r = torch.sigmoid(w_r @ f + b_r + u_r @ h + c_r)
        h = g * torch.tanh(w @ f + b + r * (u @ h + c)) + (1 - g) * h
    return h


def gru_cell(cell, x, h):
    """torch.nn.GRUCell's equations: r, z gates, candidate n, h' = (1 - z) n + z h."""
    gi, gh = cell.weight_ih @ x + cell.bias_ih, cell.weight_hh @ h + cell.bias_hh
    (ir, iz, i_n), (hr, hz, hn) = gi.chunk(3), gh.chunk(3)
    r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
    return (1 - z) * torch.tanh(i_n + r * hn) + z * h


def episodic_reference(block, query, facts, mask=None):
    rows = []
    for b in range(query.shape[0]):
        q, valid = query[b], torch.ones(facts.shape[1], dtype=torch.bool) if mask is None else mask[b]
        f = facts[b][valid]
        m = q
        for t in range(block.passes):
            z = torch.cat([f * q, f * m, (f - q).abs(), (f - m).abs()], -1)
            first, second = block.gate[0], block.gate[2]
            scores = linear(second, torch.tanh(linear(first, z))).squeeze(-1)
            g = torch.exp(scores - scores.max())
            g = g / g.sum()
            c = attention_gru(block.episode_gru, f, g) if block.episode == "attention_gru" else g @ f
            if block.update == "relu":
                m = torch.relu(linear(block.memory_update[t], torch.cat([m, c, q])))
            else:
                m = gru_cell(block.memory_update, c, m)
        rows.append(m)
    return torch.stack(rows)


def inputs(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, N, dtype=torch.bool)
    mask[0, 3:] = False  # example 0 has three facts, example 2 one
    mask[2, 1:] = False
    return torch.randn(B, D, generator=gen), torch.randn(B, N, D, generator=gen), mask


@pytest.mark.parametrize("episode", ["attention_gru", "soft"])
@pytest.mark.parametrize("update", ["relu", "gru"])
@pytest.mark.parametrize("masked", [True, False])
def test_matches_reference(episode, update, masked, device):
    block = randomize_(EpisodicMemory(D, passes=3, episode=episode, update=update, hidden=6))
    query, facts, mask = inputs()
    assert_matches_reference(block, episodic_reference, query, facts, *([mask] if masked else []), device=device)


def test_gates_and_capture():
    block = EpisodicMemory(D, passes=2)
    query, facts, mask = inputs()
    out, gates, _ = block(query, facts, mask, need_weights=True)
    torch.testing.assert_close(out, block(query, facts, mask))
    assert gates.shape == (B, 2, N)
    assert (gates.transpose(1, 2)[~mask] == 0).all(), "padded facts get gate 0"
    torch.testing.assert_close(gates.sum(-1), torch.ones(B, 2))
    with capture(block) as maps:
        block(query, facts, mask)
    records = maps["episodic_memory"]
    assert len(records) == 2 and records[0].keys == (N,)
    torch.testing.assert_close(torch.stack([r.weights for r in records], 1), gates)


def test_the_attention_gru_skips_padded_facts():
    """A padded fact (gate 0) leaves the episode as it is: padding at the end changes nothing."""
    block = EpisodicMemory(D, passes=2)
    query, facts, _ = inputs()
    longer = torch.cat([facts, torch.randn(B, 2, D)], 1)
    mask = torch.cat([torch.ones(B, N, dtype=torch.bool), torch.zeros(B, 2, dtype=torch.bool)], 1)
    torch.testing.assert_close(block(query, longer, mask), block(query, facts))


def test_shape_and_option_errors():
    block = create("episodic_memory", D)
    query, facts, mask = inputs()
    with pytest.raises(ShapeError, match=r"episodic_memory: facts must have shape \(3, N, 4\), got \(3, 5, 3\)"):
        block(query, facts[..., :3])
    with pytest.raises(ShapeError, match=r"episodic_memory: mask must have shape \(3, 5\), got \(3, 4\)"):
        block(query, facts, mask[:, :4])
    with pytest.raises(ValueError, match="episode must be one of"):
        EpisodicMemory(D, episode="sum")
    with pytest.raises(ValueError, match="update must be one of"):
        EpisodicMemory(D, update="tied")
    with pytest.raises(ValueError, match="passes must be at least 1"):
        EpisodicMemory(D, passes=0)
