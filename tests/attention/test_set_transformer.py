"""The Set Transformer's blocks (MAB, SAB, ISAB, PMA) against the paper's equations written per
example and head, with padded set elements; permutation equivariance and invariance."""

from __future__ import annotations

import math

import pytest
import torch

from framework.attention import ShapeError, capture, create
from framework.attention.cross import MultiheadAttentionBlock
from framework.attention.pooling import PoolingByMultiheadAttention
from framework.attention.sequence import InducedSetAttentionBlock, SetAttentionBlock
from tests.attention.reference import assert_matches_reference, randomize_

B, M, N, D = 3, 2, 5, 8


def linear(layer, x):
    return x @ layer.weight.T + layer.bias


def layer_norm(norm, x):
    if isinstance(norm, torch.nn.Identity):
        return x
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.square().mean(-1, keepdim=True) + norm.eps) * norm.weight + norm.bias


def feed_forward(ff, x):
    return linear(ff[2], torch.relu(linear(ff[0], x)))


def mab_reference(mab, x, y, mask=None):
    """LN(H + rFF(H)), H = LN(X + Multihead(X, Y, Y)), heads of d = D / h, scores / sqrt(d)."""
    attention, rows = mab.attention, []
    for b in range(x.shape[0]):
        keys = y[b] if mask is None else y[b][mask[b]]
        q, k, v = linear(attention.q_proj, x[b]), linear(attention.k_proj, keys), linear(attention.v_proj, keys)
        heads = []
        for h in range(attention.num_heads):
            part = slice(h * q.shape[-1] // attention.num_heads, (h + 1) * q.shape[-1] // attention.num_heads)
            energies = q[:, part] @ k[:, part].T / math.sqrt(part.stop - part.start)
            weights = torch.exp(energies - energies.max(-1, keepdim=True).values)
            heads.append(weights / weights.sum(-1, keepdim=True) @ v[:, part])
        hidden = layer_norm(mab.norm_attended, x[b] + linear(attention.out_proj, torch.cat(heads, -1)))
        rows.append(layer_norm(mab.norm_output, hidden + feed_forward(mab.feed_forward, hidden)))
    return torch.stack(rows)


def sab_reference(block, x, mask=None):
    return mab_reference(block, x, x, mask)


def isab_reference(block, x, mask=None):
    summary = mab_reference(block.induce, block.inducing.expand(x.shape[0], -1, -1), x, mask)
    return mab_reference(block.read, x, summary)


def pma_reference(block, x, mask=None):
    out = mab_reference(block.pool, block.seeds.expand(x.shape[0], -1, -1), feed_forward(block.feed_forward, x), mask)
    return out.squeeze(1) if block.num_seeds == 1 else out


def inputs(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, N, dtype=torch.bool)
    mask[0, 3:] = False  # example 0 has three elements, example 2 one
    mask[2, 1:] = False
    return torch.randn(B, M, D, generator=gen), torch.randn(B, N, D, generator=gen), mask


@pytest.mark.parametrize("layer_norm_", [True, False], ids=["ln", "no_ln"])
@pytest.mark.parametrize("masked", [True, False])
def test_mab_matches_reference(layer_norm_, masked, device):
    block = randomize_(MultiheadAttentionBlock(D, 6, num_heads=2, hidden=5, layer_norm=layer_norm_))
    x, y, mask = inputs()
    y = y[..., :6]
    kwargs = {"key_padding_mask": mask} if masked else {}
    assert_matches_reference(
        block,
        lambda b, x, y, key_padding_mask=None: mab_reference(b, x, y, key_padding_mask),
        x,
        y,
        device=device,
        **kwargs,
    )


@pytest.mark.parametrize(
    "name, reference, options",
    [
        ("sab", sab_reference, {}),
        ("isab", isab_reference, {"num_inducing": 3}),
        ("pma", pma_reference, {"num_seeds": 1}),
        ("pma", pma_reference, {"num_seeds": 3}),
    ],
)
def test_set_blocks_match_reference(name, reference, options, device):
    block = randomize_(create(name, D, num_heads=2, hidden=5, **options))
    _, x, mask = inputs()
    assert_matches_reference(block, reference, x, mask, device=device)


@pytest.mark.parametrize("name", ["sab", "isab", "pma"])
def test_permutations_of_the_real_elements_and_padding(name):
    """SAB and ISAB are permutation-equivariant and PMA invariant over the real elements; what the
    padded elements hold changes nothing for them."""
    torch.manual_seed(0)
    block = create(name, D, num_heads=2).eval()
    _, x, mask = inputs()
    order = torch.tensor([2, 0, 1, 4, 3])  # example 0's three real elements are 0, 1, 2
    shuffled = block(x[:1, order], mask[:1, order])
    padded = x.clone()
    padded[~mask] = 100.0
    if name == "pma":
        torch.testing.assert_close(shuffled, block(x[:1], mask[:1]))
        torch.testing.assert_close(block(padded, mask), block(x, mask))
    else:
        torch.testing.assert_close(shuffled[0, :3], block(x[:1], mask[:1])[0, order[:3]])
        torch.testing.assert_close(block(padded, mask)[mask], block(x, mask)[mask])


def test_weights_and_capture():
    _, x, mask = inputs()
    isab = InducedSetAttentionBlock(D, num_inducing=3, num_heads=2)
    out, (inducing, elements), _ = isab(x, mask, need_weights=True)
    torch.testing.assert_close(out, isab(x, mask))
    assert inducing.shape == (B, 2, 3, N) and elements.shape == (B, 2, N, 3)
    assert (inducing.permute(0, 3, 1, 2)[~mask] == 0).all(), "inducing points attend to real elements only"
    pma = PoolingByMultiheadAttention(D, num_seeds=2, num_heads=2)
    sab = SetAttentionBlock(D, num_heads=2)
    with capture(pma) as pooled, capture(sab) as attended:
        pma(x, mask)
        sab(x, mask)
    (record,) = pooled["pma"]
    assert record.weights.shape == (B, 2, 2, N) and record.queries is None and record.keys == (N,)
    torch.testing.assert_close(record.weights.sum(-1), torch.ones(B, 2, 2))
    assert attended["sab"][0].weights.shape == (B, 2, N, N) and attended["sab"][0].queries == (N,)
    assert pma.weights_image(record).shape == (2, N)


def test_shape_and_option_errors():
    _, x, mask = inputs()
    with pytest.raises(ShapeError, match=r"mab: y must have shape \(3, N, 8\), got \(3, 5, 4\)"):
        create("mab", D)(x, x[..., :4])
    with pytest.raises(ShapeError, match=r"isab: mask must have shape \(3, 5\), got \(3, 4\)"):
        create("isab", D)(x, mask[:, :4])
    with pytest.raises(ShapeError, match=r"pma: x must have shape \(B, N, 8\), got \(3, 5\)"):
        create("pma", D)(x[..., 0])
    with pytest.raises(ValueError, match="num_inducing must be at least 1"):
        InducedSetAttentionBlock(D, num_inducing=0)
    with pytest.raises(ValueError, match="num_seeds must be at least 1"):
        PoolingByMultiheadAttention(D, num_seeds=0)
    assert create("pma", D)(x).shape == (B, D) and create("sab", D)(x).shape == (B, N, D)
