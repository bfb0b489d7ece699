"""Vision blocks of catalogue II (SAGAN, axial, stand-alone local 2-D self-attention), each against
a naive formula written here (loops over rows, columns, pixels and window offsets), forward and
backward, plus the fused paths, captures, where a pixel looks, and the errors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from framework.attention import AttentionOutput, ShapeError, capture, create
from framework.attention.feature_map import non_local as non_local_module

from .reference import assert_matches_reference, randomize_
from .test_feature_map import max_pool2, softmax

B, C, H, W = 2, 8, 4, 5


def feature_map(seed: int = 0, channels: int = C, height: int = H, width: int = W) -> Tensor:
    return torch.randn(B, channels, height, width, generator=torch.Generator().manual_seed(seed)) * 0.5


def project(weight: Tensor, x: Tensor, bias: Tensor | None = None) -> Tensor:
    """A 1 x 1 convolution as an explicit sum over input channels: weight (O, I[, 1, 1]), x (B, I, ...)."""
    weight = weight.reshape(weight.shape[0], weight.shape[1])
    out = sum(weight[None, :, i].reshape(1, -1, *[1] * (x.dim() - 2)) * x[:, i : i + 1] for i in range(x.shape[1]))
    return out if bias is None else out + bias.reshape(1, -1, *[1] * (x.dim() - 2))


# --- naive formulas


def sagan_ref(block, x):
    pool = max_pool2 if block.pool else (lambda t: t)
    f = project(block.f.weight, x).flatten(2)  # (B, C', HW)
    g, h = (pool(project(conv.weight, x)).flatten(2) for conv in (block.g, block.h))
    beta = softmax(torch.einsum("bci,bcj->bij", f, g))
    o = project(block.v.weight, torch.einsum("bij,bcj->bci", beta, h).reshape(x.shape[0], -1, *x.shape[2:]))
    return block.gamma * o + x


def axis_ref(layer, lines: list[Tensor], heads: int) -> list[Tensor]:
    """One axial pass over explicit lines, each (B, C, L): per line and head, scaled dot-product
    self-attention; then W_O and the gated residual."""
    channels = lines[0].shape[1]
    d = channels // heads
    weight, bias = layer.qkv.weight, layer.qkv.bias
    results = []
    for line in lines:
        q, k, v = (
            project(
                weight[part * channels : (part + 1) * channels], line, bias[part * channels : (part + 1) * channels]
            )
            for part in range(3)
        )
        context = []
        for n in range(heads):
            qn, kn, vn = (t[:, n * d : (n + 1) * d] for t in (q, k, v))
            a = softmax(torch.einsum("bdl,bdm->blm", qn, kn) / math.sqrt(d))
            context.append(torch.einsum("blm,bdm->bdl", a, vn))
        results.append(line + layer.gamma * project(layer.out.weight, torch.cat(context, 1), layer.out.bias))
    return results


def axial_ref(block, x):
    heads = block.rows.num_heads
    rows = axis_ref(block.rows, [x[:, :, i, :] for i in range(x.shape[2])], heads)  # each (B, C, W)
    y = torch.stack(rows, dim=2)
    columns = axis_ref(block.columns, [y[:, :, :, j] for j in range(y.shape[3])], heads)  # each (B, C, H)
    return torch.stack(columns, dim=3)


def stand_alone_ref(block, x):
    """A loop over pixels, heads and window offsets; offsets outside the map are skipped."""
    heads, k = block.num_heads, block.kernel_size
    batch, channels, height, width = x.shape
    d, r = channels // heads, k // 2
    q, key, value = (project(block.qkv.weight[p * channels : (p + 1) * channels], x) for p in range(3))
    out = torch.zeros_like(x)
    rows = []
    for i in range(height):
        row = []
        for j in range(width):
            pixel = []
            for n in range(heads):
                part = slice(n * d, (n + 1) * d)
                qn = q[:, part, i, j]  # (B, d)
                energies, values = [], []
                for a in range(i - r, i + r + 1):
                    for b in range(j - r, j + r + 1):
                        if 0 <= a < height and 0 <= b < width:
                            offset = torch.cat([block.rel_rows[n, a - i + r], block.rel_columns[n, b - j + r]])
                            energies.append((qn * (key[:, part, a, b] + offset)).sum(-1))
                            values.append(value[:, part, a, b])
                weights = softmax(torch.stack(energies, -1))  # (B, window inside the map)
                pixel.append(torch.einsum("bm,bmd->bd", weights, torch.stack(values, 1)))
            row.append(torch.cat(pixel, -1))
        rows.append(torch.stack(row, -1))
    out = torch.stack(rows, -2)  # (B, C, H, W)
    return x + block.gamma * out


REFERENCES = {  # case: (name, constructor arguments, input, reference)
    "sagan": ("sagan", dict(reduction=4, value_reduction=4), feature_map(channels=16), sagan_ref),
    "sagan_biggan": (
        "sagan",
        dict(value_reduction=2, pool=True),
        feature_map(channels=16, height=5, width=7),
        sagan_ref,
    ),
    "axial": ("axial", dict(num_heads=2), feature_map(), axial_ref),
    "axial_one_head": ("axial", dict(num_heads=1), feature_map(height=3, width=6), axial_ref),
    "stand_alone": ("stand_alone", dict(kernel_size=3, num_heads=2), feature_map(), stand_alone_ref),
    "stand_alone_window_beyond_map": (
        "stand_alone",
        dict(
            kernel_size=7,
            num_heads=1,
        ),
        feature_map(channels=4),
        stand_alone_ref,
    ),
}


def randomized(name: str, channels: int, **kwargs):
    return randomize_(create(name, channels, **kwargs), scale=0.4)


@pytest.mark.parametrize("case", sorted(REFERENCES))
def test_matches_reference(case, device):
    name, kwargs, x, reference = REFERENCES[case]
    block = randomized(name, x.shape[1], **kwargs)
    assert_matches_reference(block, reference, x, device=device)


@pytest.mark.parametrize("case", ["sagan_biggan", "axial", "stand_alone"])
def test_weights_path_matches_reference_and_the_fused_path(case, device):
    name, kwargs, x, reference = REFERENCES[case]
    block = randomized(name, x.shape[1], **kwargs)
    with capture(block):
        assert_matches_reference(block, reference, x, device=device)  # explicit softmax, weights recorded
    block = block.float().to(device)
    x1, x2 = x.float().to(device).requires_grad_(), x.float().to(device).requires_grad_()
    fused = block(x1)
    explicit = block(x2, need_weights=True).output
    torch.testing.assert_close(fused, explicit)
    cotangent = torch.randn_like(fused)
    for f, e in zip(
        torch.autograd.grad(fused, [x1, *block.parameters()], cotangent),
        torch.autograd.grad(explicit, [x2, *block.parameters()], cotangent),
    ):
        torch.testing.assert_close(f, e)


@pytest.mark.parametrize("name, calls", [("sagan", 1), ("axial", 2)])
def test_fused_kernel_only_without_weights(name, calls, monkeypatch):
    seen = []
    sdpa = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        seen.append(args[0].shape)
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(non_local_module.F, "scaled_dot_product_attention", spy)
    block, x = create(name, 16, num_heads=2) if name == "axial" else create(name, 16), feature_map(channels=16)
    block(x)
    assert len(seen) == calls
    if name == "axial":  # one batch of B * H rows, then one of B * W columns: no loop over lines
        assert seen == [(B * H, 2, W, 8), (B * W, 2, H, 8)]
    with capture(block):
        block(x)
    block(x, need_weights=True)
    assert len(seen) == calls


WEIGHT_SHAPES = {
    "sagan": ((B, H * W, H * W),),
    "sagan_biggan": ((B, 5 * 7, 2 * 3),),
    "axial": ((B, 2, H, W, W), (B, 2, H, W, H)),
    "stand_alone": ((B, 2, H, W, 3, 3),),
}


@pytest.mark.parametrize("case", sorted(WEIGHT_SHAPES))
def test_capture_records_documented_weights_and_grids(case):
    name, kwargs, x, _ = REFERENCES[case]
    block = create(name, x.shape[1], **kwargs)
    with capture(block) as maps:
        out = block(x)
    (record,) = maps[name]
    weights = record.weights if isinstance(record.weights, tuple) else (record.weights,)
    assert tuple(w.shape for w in weights) == WEIGHT_SHAPES[case]
    grid = tuple(x.shape[2:])
    assert record.queries == grid and record.keys == ((grid[0] // 2, grid[1] // 2) if kwargs.get("pool") else grid)
    for w in weights:
        flat = w.flatten(-2) if name == "stand_alone" else w
        torch.testing.assert_close(flat.sum(-1), torch.ones(flat.shape[:-1]))
    result = block(x, need_weights=True)
    assert isinstance(result, AttentionOutput)
    torch.testing.assert_close(result.output, out)


def test_stand_alone_windows_leave_out_what_lies_outside_the_map():
    block = create("stand_alone", C, kernel_size=3, num_heads=2)
    weights = block(feature_map(), need_weights=True).weights  # (B, h, H, W, 3, 3)
    assert (weights[:, :, 0, :, 0] == 0).all() and (weights[:, :, -1, :, 2] == 0).all()  # rows above / below
    assert (weights[:, :, :, 0, :, 0] == 0).all() and (weights[:, :, :, -1, :, 2] == 0).all()  # columns left / right
    assert (weights[:, :, 1:-1, 1:-1] > 0).all()


def test_where_a_pixel_looks():
    x = feature_map()
    axial, stand_alone = create("axial", C, num_heads=2), create("stand_alone", C, kernel_size=3, num_heads=2)
    with capture(axial) as axial_maps, capture(stand_alone) as window_maps:
        axial(x)
        stand_alone(x)
    row, column = axial_maps["axial"][0].weights
    cross = axial.looks(axial_maps["axial"][0], (1, 3))
    assert cross.shape == (B, H, W)
    expected = torch.zeros(B, H, W)
    expected[:, 1, :] += row[:, :, 1, 3].mean(1)
    expected[:, :, 3] += column[:, :, 1, 3].mean(1)
    torch.testing.assert_close(cross, expected)
    torch.testing.assert_close(cross.sum((1, 2)), torch.full((B,), 2.0))  # a row and a column, each summing to 1

    record = window_maps["stand_alone"][0]
    corner = stand_alone.looks(record, (0, 4))  # top right: a 2 x 2 part of the 3 x 3 window
    window = record.weights[:, :, 0, 4].mean(1)
    torch.testing.assert_close(corner[:, :2, 3:], window[:, 1:, :2])
    assert corner[:, 2:].eq(0).all() and corner[:, :, :3].eq(0).all()
    torch.testing.assert_close(corner.sum((1, 2)), torch.ones(B))
    assert stand_alone.weights_image(record).shape == (H, W)


@pytest.mark.parametrize(
    "name, gates", [("sagan", ["gamma"]), ("axial", ["rows.gamma", "columns.gamma"]), ("stand_alone", ["gamma"])]
)
def test_blocks_start_as_the_identity_and_their_gates_learn(name, gates):
    block, x = (
        create(name, 16, **({} if name == "sagan" else {"num_heads": 2})),
        feature_map(channels=16).requires_grad_(),
    )
    out = block(x)
    assert torch.equal(out, x)
    out.square().sum().backward()
    for gate in gates[:1]:  # the first gate sees the attention's output; axial's second sees it once the first moves
        assert block.get_parameter(gate).grad.abs().sum() > 0, f"no gradient reaches {gate}"


@pytest.mark.parametrize("name", ["sagan", "axial", "stand_alone"])
def test_wrong_shape_names_block_tensor_and_shapes(name):
    block = create(name, 16, **({} if name == "sagan" else {"num_heads": 2}))
    with pytest.raises(ShapeError) as err:
        block(torch.zeros(B, 8, H, W))
    assert str(err.value) == f"{name}: x must have shape (B, 16, H, W), got ({B}, 8, {H}, {W})"


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="axial: channels=12 must be divisible by num_heads=8"):
        create("axial", 12)
    with pytest.raises(ValueError, match="stand_alone: kernel_size must be odd, got 4"):
        create("stand_alone", 16, kernel_size=4)
    with pytest.raises(ValueError, match="stand_alone: channels=24 must be num_heads=8 times an even head width"):
        create("stand_alone", 24, num_heads=8)
    # unnamed, the heads are the most of 8, 4, 2, 1 that leave an even head width: narrow stages take it too
    assert [create("stand_alone", c).num_heads for c in (64, 24, 8, 4, 2)] == [8, 4, 4, 2, 1]
    with pytest.raises(ValueError, match="sagan: reduction and value_reduction must be at least 1"):
        create("sagan", 16, reduction=0)
    with pytest.raises(ShapeError, match=r"sagan: pool=True halves the keys' grid, so x needs H, W >= 2"):
        create("sagan", 16, pool=True)(torch.zeros(1, 16, 1, 5))
