"""Feature-map blocks: each against a naive formula written here, plus shapes, capture and timm."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.attention import AttentionOutput, ShapeError, capture, create
from framework.attention.feature_map import bottleneck_width
from framework.attention.feature_map import non_local as non_local_module
from framework.attention.feature_map.eca import eca_kernel_size

from .reference import assert_matches_reference, randomize_

B, C, H, W = 2, 16, 5, 7
NAMES = ["se", "eca", "spatial", "cbam", "non_local", "danet_position", "danet_channel", "danet", "gc"]
ZERO_INIT = ["non_local", "danet_position", "danet_channel", "danet", "gc"]


def feature_map(seed: int = 0, scale: float = 0.5) -> Tensor:
    return torch.randn(B, C, H, W, generator=torch.Generator().manual_seed(seed)) * scale


# --- naive formulas: einsums and loops over the block's parameters, nothing shared with the library


def sigmoid(z: Tensor) -> Tensor:
    return 1 / (1 + torch.exp(-z))


def softmax(e: Tensor) -> Tensor:
    """Over the last axis; float64 and moderate energies need no max shift."""
    return e.exp() / e.exp().sum(-1, keepdim=True)


def linear(layer: nn.Linear, z: Tensor) -> Tensor:
    return torch.einsum("oi,bi->bo", layer.weight, z) + layer.bias


def conv1x1(conv: nn.Conv2d, x: Tensor) -> Tensor:
    return torch.einsum("oi,bihw->bohw", conv.weight[:, :, 0, 0], x) + conv.bias[None, :, None, None]


def conv_same(weight: Tensor, bias: Tensor, m: Tensor) -> Tensor:
    """k x k convolution with zero padding, as a sum over the kernel's offsets."""
    k, (h, w) = weight.shape[-1], m.shape[-2:]
    padded = F.pad(m, [k // 2] * 4)
    out = sum(
        torch.einsum("oi,bihw->bohw", weight[:, :, di, dj], padded[:, :, di : di + h, dj : dj + w])
        for di in range(k)
        for dj in range(k)
    )
    return out + bias[None, :, None, None]


def flat(x: Tensor) -> Tensor:
    return x.reshape(x.shape[0], x.shape[1], -1)  # (B, C, HW)


def se_ref(block, x):
    z = x.sum((2, 3)) / (x.shape[2] * x.shape[3])
    s = sigmoid(linear(block.fc2, linear(block.fc1, z).clamp(min=0)))
    return x * s[:, :, None, None]


def eca_ref(block, x):
    z = x.mean((2, 3))
    w, k = block.conv.weight[0, 0], block.conv.weight.shape[-1]
    padded = torch.cat([z.new_zeros(B, k // 2), z, z.new_zeros(B, k // 2)], dim=1)
    s = sigmoid(sum(w[i] * padded[:, i : i + z.shape[1]] for i in range(k)))
    return x * s[:, :, None, None]


def spatial_ref(block, x):
    m = torch.stack([x.mean(1), x.max(1).values], dim=1)
    return x * sigmoid(conv_same(block.conv.weight, block.conv.bias, m))


def cbam_ref(block, x):
    def mlp(z):
        return linear(block.fc2, linear(block.fc1, z).clamp(min=0))

    s = sigmoid(mlp(x.mean((2, 3))) + mlp(x.amax((2, 3))))
    return spatial_ref(block.spatial, x * s[:, :, None, None])


def max_pool2(t: Tensor) -> Tensor:
    h, w = t.shape[2] // 2, t.shape[3] // 2
    windows = [[t[:, :, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2].amax((2, 3)) for j in range(w)] for i in range(h)]
    return torch.stack([torch.stack(row, -1) for row in windows], -2)


def batch_norm_eval(bn: nn.BatchNorm2d, y: Tensor) -> Tensor:
    mean, var, weight, bias = (v[None, :, None, None] for v in (bn.running_mean, bn.running_var, bn.weight, bn.bias))
    return (y - mean) / torch.sqrt(var + bn.eps) * weight + bias


def non_local_ref(block, x):
    pool = max_pool2 if isinstance(block.pool, nn.MaxPool2d) else (lambda t: t)
    theta, phi, g = flat(conv1x1(block.theta, x)), flat(pool(conv1x1(block.phi, x))), flat(pool(conv1x1(block.g, x)))
    a = softmax(torch.einsum("bci,bcj->bij", theta, phi))
    y = torch.einsum("bij,bcj->bci", a, g).reshape(B, -1, H, W)
    return batch_norm_eval(block.norm, conv1x1(block.out, y)) + x


def position_term(block, x):
    q, k, v = flat(conv1x1(block.query, x)), flat(conv1x1(block.key, x)), flat(conv1x1(block.value, x))
    a = softmax(torch.einsum("bci,bcj->bij", q, k))
    return block.gamma * torch.einsum("bij,bcj->bci", a, v).reshape(x.shape)


def channel_term(block, x):
    energy = torch.einsum("bci,bdi->bcd", flat(x), flat(x))
    a = softmax(energy.max(-1, keepdim=True).values - energy)  # the official code, literally
    return block.beta * torch.einsum("bcd,bdi->bci", a, flat(x)).reshape(x.shape)


def gc_ref(block, x):
    a = softmax(flat(conv1x1(block.mask, x))[:, 0])  # (B, HW)
    context = torch.einsum("bcj,bj->bc", flat(x), a)
    h = linear(block.fc1, context)
    mean, var = h.mean(-1, keepdim=True), ((h - h.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True)
    h = (h - mean) / torch.sqrt(var + block.norm.eps) * block.norm.weight + block.norm.bias
    return x + linear(block.fc2, h.clamp(min=0))[:, :, None, None]


REFERENCES = {  # test case: (registered name, constructor arguments, reference)
    "se": ("se", {}, se_ref),
    "eca": ("eca", {}, eca_ref),
    "eca_k5": ("eca", {"kernel_size": 5}, eca_ref),
    "spatial": ("spatial", {}, spatial_ref),
    "spatial_k3": ("spatial", {"kernel_size": 3}, spatial_ref),
    "cbam": ("cbam", {"reduction": 4}, cbam_ref),
    "non_local": ("non_local", {}, non_local_ref),
    "non_local_sub_sample": ("non_local", {"sub_sample": True, "inner_channels": 6}, non_local_ref),
    "danet_position": ("danet_position", {}, lambda b, x: x + position_term(b, x)),
    "danet_channel": ("danet_channel", {}, lambda b, x: x + channel_term(b, x)),
    "danet": ("danet", {}, lambda b, x: x + position_term(b.position, x) + channel_term(b.channel, x)),
    "gc": ("gc", {"reduction": 4}, gc_ref),
}


def randomized(name: str, **kwargs) -> nn.Module:
    block = randomize_(create(name, C, **kwargs), scale=0.4)
    for bn in (m for m in block.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
    return block.eval()


@pytest.mark.parametrize("case", sorted(REFERENCES))
def test_matches_reference(case, device):
    name, kwargs, reference = REFERENCES[case]
    block = randomized(name, **kwargs)
    assert_matches_reference(block, reference, feature_map(), device=device)


@pytest.mark.parametrize("name", ["non_local", "danet_position"])
def test_explicit_path_matches_reference_and_fused_path(name, device):
    block, reference = randomized(name), REFERENCES[name][2]
    with capture(block):
        assert_matches_reference(block, reference, feature_map(), device=device)  # explicit softmax

    block = block.float()
    x1, x2 = feature_map().requires_grad_(), feature_map().requires_grad_()
    fused = block(x1)
    with capture(block):
        explicit = block(x2)
    torch.testing.assert_close(fused, explicit)
    cotangent = torch.randn_like(fused)
    fused_grads = torch.autograd.grad(fused, [x1, *block.parameters()], cotangent)
    explicit_grads = torch.autograd.grad(explicit, [x2, *block.parameters()], cotangent)
    for f, e in zip(fused_grads, explicit_grads):
        torch.testing.assert_close(f, e)


@pytest.mark.parametrize("name", ["non_local", "danet_position", "danet"])
def test_fused_kernel_only_without_weights(name, monkeypatch):
    calls = []
    sdpa = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(1)
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(non_local_module.F, "scaled_dot_product_attention", spy)
    block = create(name, C)
    block(feature_map())
    assert calls == [1]
    with capture(block, name):
        block(feature_map())
    block(feature_map(), need_weights=True)
    assert calls == [1]


@pytest.mark.parametrize("name", NAMES)
def test_wrong_shape_names_block_tensor_and_shapes(name):
    block = create(name, C)
    with pytest.raises(ShapeError) as err:
        block(torch.zeros(B, C // 2, H, W))
    assert str(err.value) == f"{name}: x must have shape (B, {C}, H, W), got ({B}, {C // 2}, {H}, {W})"
    with pytest.raises(ShapeError, match=rf"^{name}: x .*got \({B}, {C}, {H}\)"):
        block(torch.zeros(B, C, H))


WEIGHT_SHAPES = {
    "se": (B, C),
    "eca": (B, C),
    "spatial": (B, H, W),
    "cbam": ((B, C), (B, H, W)),
    "non_local": (B, H * W, H * W),
    "danet_position": (B, H * W, H * W),
    "danet_channel": (B, C, C),
    "danet": ((B, H * W, H * W), (B, C, C)),
    "gc": (B, H * W),
}
SOFTMAX = {"non_local", "danet_position", "danet_channel", "gc"}
#: (queries, keys) grids of each record: blocks whose weights relate pixels say so.
GRIDS = {
    "non_local": ((H, W), (H, W)),
    "danet_position": ((H, W), (H, W)),
    "danet": ((H, W), (H, W)),
    "gc": (None, (H, W)),
}


def shapes(weights):
    return tuple(shapes(w) for w in weights) if isinstance(weights, tuple) else tuple(weights.shape)


@pytest.mark.parametrize("name", NAMES)
def test_capture_records_documented_weights(name):
    block, x = create(name, C), feature_map()
    with capture(block, name) as maps:
        out = block(x)
        block(x)
    assert out.shape == x.shape and len(maps[name]) == 2
    weights = maps[name][0].weights
    assert shapes(weights) == WEIGHT_SHAPES[name]
    assert (maps[name][0].queries, maps[name][0].keys) == GRIDS.get(name, (None, None))
    if name in SOFTMAX:
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    result = block(x, need_weights=True)
    assert isinstance(result, AttentionOutput)
    torch.testing.assert_close(result.output, out)
    assert shapes(result.weights) == WEIGHT_SHAPES[name]


def test_capture_of_sub_sampled_non_local():
    block = create("non_local", C, sub_sample=True)
    with capture(block) as maps:
        block(feature_map())
    record = maps["non_local"][0]
    assert record.weights.shape == (B, H * W, (H // 2) * (W // 2)) and record.keys == (H // 2, W // 2)


@pytest.mark.parametrize("name", NAMES)
def test_create_by_name(name):
    block = create(name, 16)
    assert block.block_name == name
    assert block(torch.randn(1, 16, 3, 4)).shape == (1, 16, 3, 4)


@pytest.mark.parametrize("name", ZERO_INIT)
@pytest.mark.parametrize("training", [True, False])
def test_zero_initialised_blocks_start_as_identity(name, training):
    block, x = create(name, C).train(training), feature_map(scale=2.0).requires_grad_()
    out = block(x)
    assert torch.equal(out, x)
    out.square().sum().backward()
    gates = {"non_local": "norm.weight", "danet_position": "gamma", "danet_channel": "beta", "gc": "fc2.weight"}
    for gate in [gates[name]] if name != "danet" else ["position.gamma", "channel.beta"]:
        assert block.get_parameter(gate).grad.abs().sum() > 0, f"no gradient reaches {gate}"


def test_eca_kernel_size_rule_and_explicit_value():
    assert [eca_kernel_size(c) for c in (1, 16, 64, 128, 256, 512, 2048)] == [1, 3, 3, 5, 5, 5, 7]
    assert create("eca", 64).conv.kernel_size == (3,)
    for k in (1, 5, 9):
        block = create("eca", 64, kernel_size=k)
        assert block.conv.kernel_size == (k,) and block.kernel_size == k
    with pytest.raises(ValueError, match="odd"):
        create("eca", 64, kernel_size=4)


# --- cross-checks against timm where its module computes the same function


def copy_linear_from_conv(linear_layer: nn.Linear, conv: nn.Conv2d) -> None:
    with torch.no_grad():
        linear_layer.weight.copy_(conv.weight[:, :, 0, 0])
        linear_layer.bias.copy_(conv.bias)


def assert_same_function(ours: nn.Module, theirs: nn.Module) -> None:
    x = feature_map(seed=1).double()
    torch.testing.assert_close(ours.double().eval()(x), theirs.double().eval()(x))


def test_se_matches_timm():
    timm = pytest.importorskip("timm.layers")
    theirs = randomize_(timm.SEModule(C, rd_channels=8))
    ours = create("se", C, reduction=2)
    copy_linear_from_conv(ours.fc1, theirs.fc1)
    copy_linear_from_conv(ours.fc2, theirs.fc2)
    assert_same_function(ours, theirs)


@pytest.mark.parametrize("kernel_size", [None, 5])
def test_eca_matches_timm(kernel_size):
    timm = pytest.importorskip("timm.layers")
    # timm honours kernel_size only when channels is not given.
    theirs = randomize_(timm.EcaModule(C) if kernel_size is None else timm.EcaModule(kernel_size=kernel_size))
    ours = create("eca", C, kernel_size=kernel_size)
    with torch.no_grad():
        ours.conv.weight.copy_(theirs.conv.weight)
    assert_same_function(ours, theirs)


def test_cbam_matches_timm_with_its_batch_norm_folded():
    cbam = pytest.importorskip("timm.layers.cbam")
    theirs = randomize_(cbam.CbamModule(C, rd_channels=4, mlp_bias=True)).eval()
    conv, bn = theirs.spatial.conv.conv, theirs.spatial.conv.bn
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 2.0)
    ours = create("cbam", C, reduction=4, min_hidden=1)
    copy_linear_from_conv(ours.fc1, theirs.channel.fc1)
    copy_linear_from_conv(ours.fc2, theirs.channel.fc2)
    with torch.no_grad():
        factor = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        ours.spatial.conv.weight.copy_(conv.weight * factor[:, None, None, None])
        ours.spatial.conv.bias.copy_(bn.bias - bn.running_mean * factor)
    assert_same_function(ours, theirs)


@pytest.mark.parametrize("name", ["se", "cbam", "gc"])
def test_gates_share_one_bottleneck_rule(name):
    """hidden = max(C // reduction, min_hidden): the papers' C / 16 with a floor of 8; or ``hidden`` itself."""
    for channels, reduction, min_hidden, hidden in ((512, 16, 8, 32), (64, 16, 8, 8), (64, 16, 2, 4), (40, 4, 8, 10)):
        block = create(name, channels, reduction=reduction, min_hidden=min_hidden)
        assert block.fc1.out_features == hidden == bottleneck_width(channels, reduction, min_hidden)
    assert create(name, 64, hidden=5).fc1.out_features == 5 == bottleneck_width(64, hidden=5)
    with pytest.raises(ValueError, match="reduction, min_hidden and hidden must be at least 1, got 0, 8 and None"):
        create(name, 16, reduction=0)


def test_gc_matches_timm():
    timm = pytest.importorskip("timm.layers")
    theirs = randomize_(timm.GlobalContext(C, fuse_add=True, fuse_scale=False, rd_channels=8))
    theirs.mlp_add.norm.eps = 1e-5  # GCNet's nn.LayerNorm default; timm uses 1e-6
    ours = create("gc", C, reduction=2)
    with torch.no_grad():
        ours.mask.load_state_dict(theirs.conv_attn.state_dict())
        ours.norm.load_state_dict(theirs.mlp_add.norm.state_dict())
    copy_linear_from_conv(ours.fc1, theirs.mlp_add.fc1)
    copy_linear_from_conv(ours.fc2, theirs.mlp_add.fc2)
    assert_same_function(ours, theirs)


def test_non_local_matches_timm_without_scaling():
    timm = pytest.importorskip("timm.layers")
    theirs = randomize_(timm.NonLocalAttn(C, use_scale=False, rd_channels=8), scale=0.3).eval()
    theirs.norm.running_mean.normal_()
    theirs.norm.running_var.uniform_(0.5, 2.0)
    ours = create("non_local", C)
    for mine, other in ((ours.theta, theirs.t), (ours.phi, theirs.p), (ours.g, theirs.g), (ours.out, theirs.z)):
        mine.load_state_dict(other.state_dict())
    ours.norm.load_state_dict(theirs.norm.state_dict())
    assert_same_function(ours, theirs)
