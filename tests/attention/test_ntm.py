"""NTM heads against the paper's addressing and memory equations written per example, head and
slot; the direction of the shift, sharpening, and erase/add writes on crafted parameters."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from framework.attention import ShapeError, capture, create
from framework.attention.memory import NTMHeads, NTMStep
from tests.attention.reference import assert_matches_reference, randomize_

B, D, N, W = 2, 6, 7, 4


def address_reference(p, memory, previous, width, max_shift):
    """Eqs. 5-9 for one head: content, interpolation, circular shift, sharpening."""
    key, beta, gate = p[:width], F.softplus(p[width]), torch.sigmoid(p[width + 1])
    shift = torch.softmax(p[width + 2 : width + 3 + 2 * max_shift], 0)
    gamma = 1 + F.softplus(p[-1])
    similarity = torch.stack([key @ slot / (key.norm() * slot.norm()) for slot in memory])
    content = torch.exp(beta * similarity) / torch.exp(beta * similarity).sum()
    interpolated = gate * content + (1 - gate) * previous
    n = len(memory)
    shifted = torch.stack(
        [
            sum(
                interpolated[(i - o) % n] * shift[o + max_shift]  # sum_j w(j) s(i - j), s on -S .. S
                for o in range(-max_shift, max_shift + 1)
            )
            for i in range(n)
        ]
    )
    return shifted**gamma / (shifted**gamma).sum()


def ntm_reference(block, controller, memory, previous):
    """Write heads on M_{t-1} (all erasures, then all adds), read heads on M_t; reads, memory, weights."""
    heads, writes = block.read_heads + block.write_heads, block.write_heads
    steps = []
    for b in range(controller.shape[0]):
        params = (controller[b] @ block.addressing.weight.T + block.addressing.bias).view(heads, -1)
        m = memory[b]
        weights = [
            address_reference(params[h], m, previous[b, h], block.memory_width, block.max_shift) for h in range(writes)
        ]
        if writes:
            erase_add = (controller[b] @ block.writing.weight.T + block.writing.bias).view(writes, 2, -1)
            for h in range(writes):
                m = m * (1 - torch.outer(weights[h], torch.sigmoid(erase_add[h, 0])))
            for h in range(writes):
                m = m + torch.outer(weights[h], erase_add[h, 1])
        reads = [
            address_reference(params[h], m, previous[b, h], block.memory_width, block.max_shift)
            for h in range(writes, heads)
        ]
        weights += reads
        steps.append(
            torch.cat([torch.stack([w @ m for w in reads]).flatten(), m.flatten(), torch.stack(weights).flatten()])
        )
    return torch.stack(steps)


def flat(step: NTMStep) -> torch.Tensor:
    return torch.cat([step.reads.flatten(1), step.memory.flatten(1), step.weights.flatten(1)], 1)


def inputs(heads: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    previous = torch.randn(B, heads, N, generator=gen).softmax(-1)
    return torch.randn(B, D, generator=gen), torch.randn(B, N, W, generator=gen), previous


@pytest.mark.parametrize("read_heads, write_heads", [(1, 1), (2, 2), (1, 0)])
@pytest.mark.parametrize("max_shift", [1, 2])
def test_matches_reference(read_heads, write_heads, max_shift, device):
    block = randomize_(NTMHeads(D, W, read_heads, write_heads, max_shift))
    assert_matches_reference(block, ntm_reference, *inputs(read_heads + write_heads), output=flat, device=device)


def crafted(key=None, beta=0.0, gate=0.0, shift=1, gamma=30.0, erase=None, add=None, max_shift=1) -> NTMHeads:
    """One write and one read head whose parameters are the biases (the controller's weights are 0)."""
    block = NTMHeads(D, W, read_heads=1, write_heads=1, max_shift=max_shift)
    offsets = torch.full((2 * max_shift + 1,), -30.0)
    offsets[shift + max_shift] = 30.0
    gamma_logit = torch.log(torch.expm1(torch.tensor(gamma - 1)))  # 1 + softplus(x) = gamma
    head = torch.cat([torch.zeros(W) if key is None else key, torch.tensor([beta, gate]), offsets, gamma_logit[None]])
    with torch.no_grad():
        block.addressing.weight.zero_()
        block.addressing.bias.copy_(head.repeat(2))
        block.writing.weight.zero_()
        block.writing.bias.copy_(
            torch.cat([torch.zeros(W) if erase is None else erase, torch.zeros(W) if add is None else add])
        )
    return block


def test_location_addressing_shifts_the_previous_weighting_forward():
    """Gate 0 keeps w_{t-1} (a one-hot at slot 2); the shift s(+1) moves it to slot 3, and slot
    N - 1 wraps round to slot 0."""
    block = crafted(gate=-30.0, shift=1)
    previous = torch.zeros(1, 2, N)
    previous[0, 0, 2] = previous[0, 1, N - 1] = 1.0
    step = block(torch.zeros(1, D), torch.randn(1, N, W), previous)
    assert step.weights[0, 0].argmax() == 3 and step.weights[0, 1].argmax() == 0
    torch.testing.assert_close(step.weights.sum(-1), torch.ones(1, 2))


def test_content_addressing_finds_the_slot_most_like_the_key_and_writes_there():
    """Gate 1, no shift: a sharp content weighting on the slot most like the key (slot 4 holds a
    noisy a); erase e = 1 and add a replace that slot by a, and the read head (same key) reads a."""
    add = torch.tensor([1.0, -2.0, 0.5, 3.0])
    memory = torch.randn(1, N, W)
    memory[0, 4] = add + 0.3 * torch.randn(W)
    block = crafted(key=3 * add, beta=50.0, gate=30.0, shift=0, erase=torch.full((W,), 30.0), add=add)
    step = block(torch.zeros(1, D), memory, torch.full((1, 2, N), 1 / N))
    assert step.weights[0].argmax(-1).tolist() == [4, 4]
    torch.testing.assert_close(step.memory[0, 4], add, atol=1e-3, rtol=0)
    torch.testing.assert_close(step.memory[0, :4], memory[0, :4], atol=1e-3, rtol=0)
    torch.testing.assert_close(step.reads[0, 0], add, atol=1e-2, rtol=0)


def test_sharpening_concentrates_a_blurred_weighting():
    """gamma = 1 keeps the shifted weighting; a large gamma keeps only its largest slot."""
    previous = torch.tensor([[0.1, 0.6, 0.3, 0, 0, 0, 0]]).expand(2, N)[None]
    blurred = crafted(gate=-30.0, shift=0, gamma=1.0 + 1e-6)(torch.zeros(1, D), torch.randn(1, N, W), previous)
    torch.testing.assert_close(blurred.weights[0, 0], previous[0, 0], atol=1e-4, rtol=0)
    sharp = crafted(gate=-30.0, shift=0, gamma=40.0)(torch.zeros(1, D), torch.randn(1, N, W), previous)
    assert sharp.weights[0, 0, 1] > 0.999


def test_zero_memory_gives_uniform_content_weights():
    block = crafted(key=torch.ones(W), beta=5.0, gate=30.0, shift=0, gamma=1.0 + 1e-6)
    step = block(torch.zeros(1, D), torch.zeros(1, N, W), torch.full((1, 2, N), 1 / N))
    torch.testing.assert_close(step.weights[0, 0], torch.full((N,), 1 / N))


def test_weights_and_capture():
    block = NTMHeads(D, W, read_heads=2, write_heads=1)
    step = block(*inputs(3))
    assert isinstance(step, NTMStep) and step.reads.shape == (B, 2, W) and step.weights.shape == (B, 3, N)
    with capture(block) as maps:
        out, weights, _ = block(*inputs(3), need_weights=True)
    torch.testing.assert_close(weights, step.weights)
    (record,) = maps["ntm"]
    torch.testing.assert_close(record.weights, step.weights)
    assert record.keys == (N,)


def test_shape_and_option_errors():
    block = create("ntm", D, W, read_heads=2)
    controller, memory, previous = inputs(3)
    with pytest.raises(ShapeError, match=r"ntm: memory must have shape \(2, N, 4\), got \(2, 7, 5\)"):
        block(controller, torch.randn(B, N, W + 1), previous)
    with pytest.raises(ShapeError, match=r"ntm: previous must have shape \(2, 3, 7\), got \(2, 2, 7\)"):
        block(controller, memory, previous[:, :2])
    with pytest.raises(ValueError, match="read_heads >= 1"):
        NTMHeads(D, W, read_heads=0)
    with pytest.raises(ValueError, match="max_shift must be >= 0"):
        NTMHeads(D, W, max_shift=-1)
