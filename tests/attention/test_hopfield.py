"""The modern Hopfield layer against the update rule written per example, head and state pattern;
its retrieval of stored patterns, and its equality with Transformer attention at one step."""

from __future__ import annotations

import pytest
import torch

from framework.attention import Attention, ShapeError, capture, create
from framework.attention.memory import HopfieldLayer
from tests.attention.reference import assert_matches_reference, randomize_

B, M, N, D = 3, 2, 5, 8


def hopfield_reference(block, query, stored, mask=None):
    """xi <- K softmax(beta K^T xi) for S - 1 steps, then V softmax(beta K^T xi), per head."""
    single = query.dim() == 2
    states = query.unsqueeze(1) if single else query
    project = not isinstance(block.q_proj, torch.nn.Identity)

    def linear(layer, x):
        return x @ layer.weight.T + layer.bias if project else x

    rows = []
    for b in range(states.shape[0]):
        valid = torch.ones(stored.shape[1], dtype=torch.bool) if mask is None else mask[b]
        keys, values = linear(block.k_proj, stored[b][valid]), linear(block.v_proj, stored[b][valid])  # (n, h * d)
        xi_all = linear(block.q_proj, states[b])  # (M, h * d)
        heads = []
        for h in range(block.num_heads):
            k = keys.unflatten(-1, (block.num_heads, -1))[:, h]
            v = values.unflatten(-1, (block.num_heads, -1))[:, h]
            read = []
            for xi in xi_all.unflatten(-1, (block.num_heads, -1))[:, h]:
                for step in range(block.steps):
                    energies = block.beta * (k @ xi)
                    p = torch.exp(energies - energies.max())
                    p = p / p.sum()
                    xi = (k if step < block.steps - 1 else v).T @ p
                read.append(xi)
            heads.append(torch.stack(read))
        rows.append(linear(block.out_proj, torch.cat(heads, -1)))
    out = torch.stack(rows)
    return out.squeeze(1) if single else out


def inputs(seed: int = 0, single: bool = False):
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, N, dtype=torch.bool)
    mask[0, 3:] = False  # example 0 has three stored patterns, example 2 one
    mask[2, 1:] = False
    query = torch.randn((B, D) if single else (B, M, D), generator=gen)
    return query, torch.randn(B, N, D, generator=gen), mask


@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("project", [True, False])
@pytest.mark.parametrize("masked", [True, False])
def test_matches_reference(steps, heads, project, masked, device):
    block = HopfieldLayer(D, num_heads=heads, steps=steps, project=project, beta=0.7)
    randomize_(block)
    query, stored, mask = inputs()
    assert_matches_reference(block, hopfield_reference, query, stored, *([mask] if masked else []), device=device)


def test_one_state_pattern_and_the_default_beta(device):
    block = randomize_(HopfieldLayer(D, num_heads=2, steps=2))
    assert block.beta == pytest.approx(0.5)  # 1 / sqrt(d_head = 4)
    query, stored, mask = inputs(single=True)
    assert_matches_reference(block, hopfield_reference, query, stored, mask, device=device)


def test_one_step_is_transformer_attention():
    """S = 1, beta = 1 / sqrt(d_head): the general model's scaled dot-product attention, same weights."""
    hopfield = randomize_(HopfieldLayer(D, num_heads=2))
    attention = Attention(D, num_heads=2, score="scaled_dot")
    attention.load_state_dict(hopfield.state_dict())
    query, stored, mask = inputs()
    torch.testing.assert_close(hopfield(query, stored, mask), attention(query, stored, key_padding_mask=mask))


def test_a_noisy_pattern_retrieves_the_stored_one():
    """The network's own retrieval (no projections): one update moves a corrupted pattern to the
    stored pattern it came from, well separated patterns being fixed points (Ramsauer et al., Thm. 4)."""
    gen = torch.Generator().manual_seed(0)
    patterns = torch.sign(torch.randn(1, 20, 64, generator=gen))  # 20 random +-1 patterns
    noisy = patterns[:, 7] * torch.where(torch.rand(1, 64, generator=gen) < 0.2, -1.0, 1.0)  # 20% of the bits flipped
    block = HopfieldLayer(64, project=False, beta=0.5)
    retrieved, weights, _ = block(noisy, patterns, need_weights=True)
    assert weights[0, 0].argmax() == 7 and weights[0, 0, 7] > 0.99
    torch.testing.assert_close(retrieved, patterns[:, 7], atol=0.02, rtol=0)
    torch.testing.assert_close(block(patterns[:, 7], patterns), patterns[:, 7], atol=1e-3, rtol=0)


def test_weights_and_capture():
    block = HopfieldLayer(D, num_heads=2, steps=3)
    query, stored, mask = inputs()
    out, weights, _ = block(query, stored, mask, need_weights=True)
    torch.testing.assert_close(out, block(query, stored, mask))
    assert weights.shape == (B, 2, M, N)
    assert (weights.permute(0, 3, 1, 2)[~mask] == 0).all(), "padded stored patterns get weight 0"
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, 2, M))
    with capture(block) as maps:
        block(query, stored, mask)
    records = maps["hopfield"]
    assert len(records) == 3 and all(r.weights.shape == (B, 2, M, N) and r.keys == (N,) for r in records)
    torch.testing.assert_close(records[-1].weights, weights)


def test_no_stored_pattern_left_reads_zeros():
    block = HopfieldLayer(D, project=False, steps=2, beta=1.0)
    query, stored, mask = inputs()
    mask[1] = False
    out = block(query, stored, mask)
    assert out[1].abs().max() == 0 and out.isfinite().all()


def test_shape_and_option_errors():
    block = create("hopfield", D)
    query, stored, mask = inputs()
    with pytest.raises(ShapeError, match=r"hopfield: stored must have shape \(3, N, 8\), got \(3, 5, 4\)"):
        block(query, stored[..., :4])
    with pytest.raises(ShapeError, match=r"hopfield: mask must have shape \(3, 5\), got \(3, 4\)"):
        block(query, stored, mask[:, :4])
    with pytest.raises(ValueError, match="steps must be at least 1"):
        HopfieldLayer(D, steps=0)
    with pytest.raises(ValueError, match="beta must be positive"):
        HopfieldLayer(D, beta=0.0)
    assert create("hopfield", D, 6)(query, torch.randn(B, N, 6)).shape == (B, M, D)
