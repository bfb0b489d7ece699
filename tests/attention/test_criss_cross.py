"""Criss-cross attention against a dense reference, the CCNet authors' algorithm and the einsum
form; its operator (``framework::criss_cross``) under ``opcheck`` and ``torch.compile``. The
Triton kernels have their own tests (test_criss_cross_triton.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from framework.attention import ShapeError, capture, create
from framework.attention.feature_map import criss_cross_op
from framework.attention.feature_map.criss_cross import CrissCrossAttention
from tests.attention.reference import assert_matches_reference, randomize_
from tools.ccnet_reference import criss_cross_authors, criss_cross_einsum


def dense_reference(block: CrissCrossAttention, x: torch.Tensor) -> torch.Tensor:
    """Each pixel attends, with one softmax, to every pixel of its row and its column.

    Built as dense (HW x HW) attention with a mask, the opposite of the block's approach.
    """
    b, c, h, w = x.shape
    rows = torch.arange(h).repeat_interleave(w)
    cols = torch.arange(w).repeat(h)
    same_line = (rows[:, None] == rows[None, :]) | (cols[:, None] == cols[None, :])  # (HW, HW)
    for _ in range(block.recurrence):
        q = F.conv2d(x, block.query_conv.weight, block.query_conv.bias).flatten(2)  # (B, C', HW)
        k = F.conv2d(x, block.key_conv.weight, block.key_conv.bias).flatten(2)
        v = F.conv2d(x, block.value_conv.weight, block.value_conv.bias).flatten(2)
        energy = torch.einsum("bcu,bcv->buv", q, k).masked_fill(~same_line, float("-inf"))
        out = torch.einsum("buv,bcv->bcu", energy.softmax(-1), v).view(b, c, h, w)
        x = block.gamma * out + x
    return x


@pytest.mark.parametrize("shape", [(2, 8, 5, 7), (1, 16, 6, 6), (2, 4, 1, 3), (2, 4, 3, 1)])
@pytest.mark.parametrize("recurrence", [1, 2])
@pytest.mark.parametrize("per_image", [True, False], ids=["per-image", "batched"])
def test_matches_dense_row_and_column_attention(shape, recurrence, per_image, monkeypatch):
    """Both forms of the portable path's column matmuls: per image (the CPU's) and batched."""
    if not per_image:
        monkeypatch.setattr(criss_cross_op, "PER_IMAGE_DEVICES", frozenset())
    block = randomize_(CrissCrossAttention(shape[1], reduction=2, recurrence=recurrence))
    assert_matches_reference(block, dense_reference, torch.randn(shape))


@pytest.mark.parametrize("reference", [criss_cross_authors, criss_cross_einsum], ids=["authors", "einsum"])
def test_matches_the_authors_algorithm_and_the_einsum_form_in_float32(reference):
    torch.manual_seed(0)
    block = randomize_(CrissCrossAttention(64, recurrence=1), scale=0.2)
    x = torch.randn(2, 64, 13, 11)
    want = x + block.gamma * reference(block.query_conv(x), block.key_conv(x), block.value_conv(x))
    torch.testing.assert_close(block(x), want, atol=1e-5, rtol=1e-5)


def test_the_einsum_form_is_the_authors_algorithm():
    q, k, v = torch.randn(2, 3, 6, 5).double(), torch.randn(2, 3, 6, 5).double(), torch.randn(2, 4, 6, 5).double()
    torch.testing.assert_close(criss_cross_einsum(q, k, v), criss_cross_authors(q, k, v))


def test_operators_pass_opcheck():
    """Schema, fake (meta) kernels, autograd registration and AOT dispatch of both operators."""
    qkv = torch.randn(2, 5, 7, 4 + 4 + 8, requires_grad=True)
    q, k, v = qkv.split([4, 4, 8], dim=-1)  # channels-last views, as the block passes them
    torch.library.opcheck(torch.ops.framework.criss_cross, (q, k, v))
    out, lse = torch.ops.framework.criss_cross(q, k, v)
    saved = (q.detach(), k.detach(), v.detach(), out.detach(), lse)
    torch.library.opcheck(torch.ops.framework.criss_cross_backward, (torch.randn_like(out), *saved))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.slow
def test_compiles_into_one_graph_forward_and_backward(backend):
    """fullgraph=True: no graph break; the operator is one node of the graph (inductor: about
    20 s here with a warm cache, 50 s cold)."""
    torch._dynamo.reset()
    block = randomize_(CrissCrossAttention(8, reduction=2, recurrence=1), scale=0.3)
    x = torch.randn(2, 8, 5, 7, requires_grad=True)
    compiled = torch.compile(block, fullgraph=True, backend=backend)
    out = compiled(x)
    assert out.is_contiguous(memory_format=torch.channels_last)
    got = torch.autograd.grad(out.square().sum(), [x, block.gamma, block.query_conv.weight])
    want_out = block(x)
    want = torch.autograd.grad(want_out.square().sum(), [x, block.gamma, block.query_conv.weight])
    torch.testing.assert_close(out, want_out, atol=1e-5, rtol=1e-5)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)


def test_captured_weights_are_the_joint_softmax_over_row_and_column():
    block = randomize_(CrissCrossAttention(8, reduction=2, recurrence=2))
    x = torch.randn(2, 8, 5, 7)
    plain = block(x)
    with capture(block) as maps:
        captured = block(x)
    torch.testing.assert_close(plain, captured)
    first, second = (record.weights for record in maps["criss_cross"])
    assert maps["criss_cross"][0].queries == maps["criss_cross"][0].keys == (5, 7)
    assert first.shape == (2, 5, 7, 5 + 7)
    torch.testing.assert_close(first.sum(-1), torch.ones(2, 5, 7))
    assert (first[:, 2, 3, 2] == 0).all(), "the query's own pixel is counted in its row only"
    image = block.looks(maps["criss_cross"][0], (2, 3))
    torch.testing.assert_close(image.sum((1, 2)), torch.ones(2))
    off_cross = torch.ones(5, 7, dtype=torch.bool)
    off_cross[2, :] = off_cross[:, 3] = False
    assert (image[:, off_cross] == 0).all()


class _LargestTensor(TorchDispatchMode):
    """Records the largest tensor any operator produces, inside the library's custom operators too."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "framework":  # run its CPU kernel with this mode watching its operators
            with self:
                out = func.redispatch(torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), *args, **(kwargs or {}))
        else:
            out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def _largest_tensor(side: int) -> int:
    block = CrissCrossAttention(8, reduction=4, recurrence=2)
    x = torch.randn(1, 8, side, side, requires_grad=True)
    with _LargestTensor() as mode:
        block(x).sum().backward()
    return mode.largest


def test_memory_grows_like_hw_times_h_plus_w_not_hw_squared():
    """No operator, forward or backward, builds an (HW x HW) tensor; the largest grows ~8x
    when the side doubles (HW (H + W)), where dense attention would grow 16x."""
    small, large = _largest_tensor(16), _largest_tensor(32)
    assert large < (32 * 32) ** 2 / 10
    assert large / small < 10


def test_starts_as_identity_and_learns_its_scale():
    block = create("criss_cross", 8)
    x = torch.randn(2, 8, 4, 5)
    torch.testing.assert_close(block(x), x)
    block(x).square().sum().backward()
    assert block.gamma.grad is not None and block.gamma.grad.abs() > 0


def test_bfloat16_autocast_stays_close_to_float32():
    torch.manual_seed(0)
    block = randomize_(CrissCrossAttention(16, reduction=2), scale=0.3)
    x = torch.randn(2, 16, 6, 9)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = block(x)
    low.float().sum().backward()
    torch.testing.assert_close(low.float(), block(x), atol=0.1, rtol=0.05)


def test_keeps_channels_last_and_rejects_wrong_shapes():
    block = CrissCrossAttention(8)
    assert block(torch.randn(2, 8, 4, 4)).is_contiguous(memory_format=torch.channels_last)
    with pytest.raises(ShapeError, match=r"criss_cross: x must have shape \(B, 8, H, W\), got \(2, 4, 4, 4\)"):
        block(torch.randn(2, 4, 4, 4))
    with pytest.raises(ValueError, match="recurrence must be >= 1"):
        CrissCrossAttention(8, recurrence=0)


def test_need_weights_returns_the_last_pass_and_the_image_is_the_centre_cross():
    block = randomize_(CrissCrossAttention(8, reduction=2, recurrence=2))
    x = torch.randn(2, 8, 5, 7)
    with capture(block) as maps:
        out = block(x, need_weights=True)
    torch.testing.assert_close(out.output, block(x))
    torch.testing.assert_close(out.weights, maps["criss_cross"][-1].weights)
    image = block.weights_image(maps["criss_cross"][-1])
    assert image.shape == (5, 7) and (image[2] > 0).all() and (image[:, 3] > 0).all()
