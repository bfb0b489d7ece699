"""Area attention ("area") against areas enumerated by loops and the general model's hand-written
reference (float64, outputs and gradients, with masks; 1-D sequences and 2-D grids)."""

from __future__ import annotations

import pytest
import torch

from framework.attention import create, weights_over_keys
from tests.attention.reference import assert_matches_reference, randomize_
from tests.attention.test_general import _reference as general_reference

D = 6


def naive_areas(block, key, value, mask, grid):
    """Every h x w block of the grid (sizes smallest first, corners row-major), by loops:
    its mean key (or Li et al.'s parameterised key), summed value and validity."""
    b = key.shape[0]
    height, width = grid
    keys, values, valid = [], [], []
    for h in range(1, min(block.max_height, height) + 1):
        for w in range(1, min(block.max_width, width) + 1):
            for top in range(height - h + 1):
                for left in range(width - w + 1):
                    items = [(top + i) * width + left + j for i in range(h) for j in range(w)]
                    k = key[:, items]
                    mean = k.mean(1)
                    if block.key_features == "mean_std":
                        std = torch.sqrt(((k - mean[:, None]) ** 2).mean(1) + 1e-6)
                        size = block.size_embedding.weight[(h - 1) * block.max_width + w - 1]
                        hidden = (
                            mean @ block.mean_map.weight.T + block.mean_map.bias + std @ block.std_map.weight.T + size
                        )
                        mean = torch.relu(hidden) @ block.key_map.weight.T + block.key_map.bias
                    keys.append(mean)
                    values.append(value[:, items].sum(1))
                    valid.append(mask[:, items].all(1) if mask is not None else torch.ones(b, dtype=torch.bool))
    return torch.stack(keys, 1), torch.stack(values, 1), torch.stack(valid, 1)


def area_reference(block, query, key, value=None, *, key_padding_mask=None, grid=None, need_weights=False):
    value = key if value is None else value
    grid = (1, key.shape[1]) if grid is None else grid
    keys, values, valid = naive_areas(block, key, value, key_padding_mask, grid)
    if query.dim() == 2:  # one query
        return general_reference(block, query.unsqueeze(1), keys, values, key_padding_mask=valid)[:, 0]
    return general_reference(block, query, keys, values, key_padding_mask=valid)


@pytest.mark.parametrize(
    "options, grid, lengths",
    [
        ({"max_width": 3, "score": "additive", "project": False}, None, [7, 4]),
        ({"max_width": 2, "num_heads": 2, "key_features": "mean_std"}, None, [7, 1]),
        ({"max_width": 2, "max_height": 2, "score": "scaled_dot"}, (2, 4), [8, 5]),
    ],
)
def test_area_attention_matches_enumerated_areas(options, grid, lengths, device):
    torch.manual_seed(0)
    n = 8 if grid else 7
    block = randomize_(create("area", D, **options), scale=0.5).double()
    query, key, value = torch.randn(2, 3, D).double(), torch.randn(2, n, D).double(), torch.randn(2, n, D).double()
    mask = torch.arange(n)[None] < torch.tensor(lengths)[:, None]
    extra = {} if grid is None else {"grid": grid}
    assert_matches_reference(block, area_reference, query, key, value, key_padding_mask=mask, device=device, **extra)
    assert_matches_reference(block, area_reference, query[:, 0], key, value, device=device, **extra)


def test_areas_are_counted_and_folded_back_onto_the_items():
    block = create("area", D, max_width=3, project=False, score="dot")
    query, key = torch.randn(1, 2, D), torch.randn(1, 5, D)
    out = block(query, key, need_weights=True)
    assert out.weights.shape == (1, 1, 2, 5 + 4 + 3)  # runs of 1, 2 and 3 tokens
    folded = block.position_weights(out.weights, (1, 5))
    torch.testing.assert_close(folded @ key, out.output.unsqueeze(1))  # values are sums: out = sum_j w_j v_j
    shares = weights_over_keys(block, out.weights, 5)  # what a reader of weights over the keys gets
    torch.testing.assert_close(shares, folded / folded.sum(-1, keepdim=True))
    torch.testing.assert_close(shares.sum(-1), torch.ones(1, 1, 2))
    assert block.key_positions is False and weights_over_keys(create("additive", D), out.weights, 5) is out.weights
    grid = create("area", D, max_width=2, max_height=2)
    assert grid.areas((2, 3)) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert (
        grid(torch.randn(1, 1, D), torch.randn(1, 6, D), grid=(2, 3), need_weights=True).weights.shape[-1]
        == 6 + 4 + 3 + 2
    )


def test_area_inputs_are_checked():
    with pytest.raises(ValueError, match=r"grid must be \(H, W\) with H \* W = 6 keys"):
        create("area", D)(torch.randn(1, 2, D), torch.randn(1, 6, D), grid=(2, 2))
    with pytest.raises(ValueError, match="key_features must be one of"):
        create("area", D, key_features="max")
    with pytest.raises(ValueError, match="attn_mask relates queries to keys"):
        create("area", D)(torch.randn(1, 2, D), torch.randn(1, 6, D), attn_mask=torch.ones(2, 6, dtype=torch.bool))
