"""MemoryRead against a naive per-example, per-hop reference (MemN2N and KV-MemNN equations)."""

from __future__ import annotations

import pytest
import torch

from framework.attention import ShapeError, capture, create
from framework.attention.memory import MemoryRead
from tests.attention.reference import assert_matches_reference, randomize_

B, N, D, HOPS = 3, 5, 4, 3


def memory_reference(block, query, keys, values, mask=None):
    """u^{k+1} from u^k, one example and one hop at a time."""
    rows = []
    for b in range(query.shape[0]):
        u = query[b]
        valid = torch.ones(keys.shape[-2], dtype=torch.bool) if mask is None else mask[b]
        for k in range(block.hops):
            m = keys[b, k] if keys.dim() == 4 else keys[b]  # (N, D)
            c = values[b, k] if values.dim() == 4 else values[b]
            scores = m @ u
            if block.linear_start:
                p = torch.where(valid, scores, torch.zeros_like(scores))
            else:
                kept = scores[valid]
                kept = torch.exp(kept - kept.max())
                p = torch.zeros_like(scores).masked_scatter(valid, kept / kept.sum())
            o = p @ c
            if block.update == "add":
                u = u + o
            elif block.update == "linear":
                u = block.H.weight @ u + o
            else:
                u = block.R[k].weight @ (u + o)
        rows.append(u)
    return torch.stack(rows)


def inputs(per_hop_keys: bool, per_hop_values: bool, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)

    def memory(per_hop: bool) -> torch.Tensor:
        return torch.randn((B, HOPS, N, D) if per_hop else (B, N, D), generator=gen)

    mask = torch.ones(B, N, dtype=torch.bool)
    mask[0, 3:] = False  # example 0 has three real slots, example 2 one
    mask[2, 1:] = False
    return torch.randn(B, D, generator=gen), memory(per_hop_keys), memory(per_hop_values), mask


@pytest.mark.parametrize("update", ["add", "linear", "per_hop"])
@pytest.mark.parametrize("per_hop", [False, True], ids=["shared", "per_hop_memory"])
@pytest.mark.parametrize("linear_start", [False, True])
@pytest.mark.parametrize("masked", [True, False])
def test_matches_reference(update, per_hop, linear_start, masked, device):
    block = randomize_(MemoryRead(D, hops=HOPS, update=update))
    block.linear_start = linear_start  # as a training callback would set it
    query, keys, values, mask = inputs(per_hop, per_hop)
    assert_matches_reference(block, memory_reference, query, keys, values, *([mask] if masked else []), device=device)


def test_shared_keys_with_per_hop_values(device):
    block = randomize_(MemoryRead(D, hops=HOPS, update="per_hop"))
    assert_matches_reference(block, memory_reference, *inputs(False, True), device=device)


@pytest.mark.parametrize("linear_start", [False, True])
def test_weights_and_capture(linear_start):
    block = MemoryRead(D, hops=HOPS, update="linear", linear_start=linear_start)
    query, keys, values, mask = inputs(True, True)
    out, weights, _ = block(query, keys, values, mask, need_weights=True)
    assert weights.shape == (B, HOPS, N)
    torch.testing.assert_close(out, block(query, keys, values, mask))
    assert (weights[~mask[:, None].expand_as(weights)] == 0).all(), "masked slots must get zero weight"
    if not linear_start:
        torch.testing.assert_close(weights.sum(-1), torch.ones(B, HOPS))

    with capture(block) as maps:
        block(query, keys, values, mask)
    records = maps["memory_read"]
    assert len(records) == HOPS
    for k, record in enumerate(records):
        assert record.weights.shape == (B, N) and record.keys == (N,)
        torch.testing.assert_close(record.weights, weights[:, k])


def test_fully_masked_example_reads_nothing():
    query, keys, values, mask = inputs(False, False)
    mask[1] = False
    out, weights, _ = MemoryRead(D, hops=2)(query, keys, values, mask, need_weights=True)
    assert not weights[1].any()
    torch.testing.assert_close(out[1], query[1])


def test_shape_errors():
    block = MemoryRead(D, hops=HOPS)
    query, keys, values, mask = inputs(False, False)
    with pytest.raises(ShapeError, match=r"memory_read: query must have shape \(B, 4\), got \(3, 5\)"):
        block(torch.randn(B, D + 1), keys, values)
    with pytest.raises(ShapeError, match=r"memory_read: keys must have shape \(3, N, 4\), got \(3, 5\)"):
        block(query, keys[..., 0], values)
    with pytest.raises(ShapeError, match=r"memory_read: keys must have shape \(3, 3, N, 4\), got \(3, 2, 5, 4\)"):
        block(query, torch.randn(B, 2, N, D), values)
    with pytest.raises(ShapeError, match=r"memory_read: values must have shape \(3, 5, 4\), got \(3, 6, 4\)"):
        block(query, keys, torch.randn(B, N + 1, D))
    with pytest.raises(ShapeError, match=r"memory_read: mask must have shape \(3, 5\), got \(3, 6\)"):
        block(query, keys, values, torch.ones(B, N + 1, dtype=torch.bool))
    with pytest.raises(ValueError, match="update must be one of"):
        MemoryRead(D, update="gated")


def test_create():
    block = create("memory_read", 16, hops=3)
    assert isinstance(block, MemoryRead) and block.hops == 3
    assert block(torch.randn(2, 16), torch.randn(2, 7, 16), torch.randn(2, 7, 16)).shape == (2, 16)
    parameters = {n for n, _ in create("memory_read", 16, hops=3, update="per_hop").named_parameters()}
    assert parameters == {"R.0.weight", "R.1.weight", "R.2.weight"}
