"""Statistics of attention rows (``framework.attention.statistics``) against the full map: each
written again here from the eager weights and energies (``torch.distributions.Categorical`` for
the entropy), on every device; from probe rows they equal those of the same rows of the full map."""

from __future__ import annotations

import math

import pytest
import torch

from framework.attention import capture, create
from framework.attention.statistics import row_statistics
from tests.attention.reference import randomize_


def reference(weights, energies, allowed, real_queries, k=3):
    """Per head means over the real queries: entropy, entropy / log(allowed keys) (of the queries
    with two or more), max weight, top-k mass, max energy over the allowed keys. weights,
    energies, allowed (B, h, Q, K)."""
    probs = weights.double()
    entropy = torch.distributions.Categorical(probs=probs).entropy()
    ratio = entropy / allowed.sum(-1).double().log()
    top = probs.sort(-1, descending=True).values[..., :k].sum(-1)
    largest_energy = energies.double().masked_fill(~allowed, -math.inf).max(-1).values
    keep = real_queries[:, None, :].expand_as(entropy)
    choice = keep & (allowed.sum(-1) > 1)  # a query with one key has no choice: no ratio
    mean = lambda v, keep=keep: torch.stack([v[:, h][keep[:, h]].mean() for h in range(v.shape[1])])  # noqa: E731
    return {
        "entropy": mean(entropy),
        "entropy_ratio": mean(ratio, choice),
        "max_weight": mean(probs.max(-1).values),
        f"top{k}_mass": mean(top),
        "max_logit": mean(largest_energy),
    }


@pytest.mark.parametrize("probes", [64, [0, 2, 5, 6]])
def test_statistics_of_self_attention_equal_the_full_maps(probes, device):
    torch.manual_seed(0)
    block = randomize_(create("mhsa", 16, num_heads=2, causal=True), scale=0.5).eval().to(device)
    x, mask = torch.randn(2, 7, 16, device=device), torch.ones(2, 7, dtype=torch.bool, device=device)
    mask[1, 5:] = False
    with torch.no_grad():
        with capture(block) as full:
            block(x, mask)
        with capture(block, probes=probes) as rows:
            block(x, mask)  # the fused path
        q, k = (block._split(p(x)) for p in (block.q_proj, block.k_proj))
    chosen = torch.arange(7) if probes == 64 else torch.tensor(probes)
    allowed = (mask[:, None, None, :] & torch.ones(7, 7, dtype=torch.bool, device=device).tril())[
        :, :, chosen.to(device)
    ]
    energies = (q @ k.transpose(-1, -2) / math.sqrt(8))[:, :, chosen.to(device)]
    weights = full["mhsa"][0].weights[:, :, chosen.to(device)]
    want = reference(weights, energies, allowed.expand_as(weights), mask[:, chosen.to(device)], k=3)
    got = row_statistics(rows["mhsa"][0], top_k=3).values()
    assert set(got) == set(want)
    for name in want:
        torch.testing.assert_close(got[name].cpu(), want[name].cpu(), msg=name)


def test_criss_cross_statistics_and_its_kernels_log_sum_exp(device):
    torch.manual_seed(0)
    block = randomize_(create("criss_cross", 16, recurrence=1), scale=0.5).eval().to(device)
    x = torch.randn(2, 16, 5, 6, device=device)
    with torch.no_grad():
        with capture(block) as full:
            block(x)
        with capture(block, probes=64) as rows:
            block(x)
        qkv = torch.nn.functional.conv2d(
            x,
            torch.cat([block.query_conv.weight, block.key_conv.weight]),
            torch.cat([block.query_conv.bias, block.key_conv.bias]),
        )
    q, k = qkv.split(block.inner, dim=1)
    energies = torch.einsum("bcij,bcuv->bijuv", q, k).flatten(3).flatten(1, 2)[:, None]  # (B, 1, HW, HW): every pair
    cross = torch.zeros(5, 6, 5, 6, dtype=torch.bool, device=device)
    for i in range(5):
        for j in range(6):
            cross[i, j, i, :], cross[i, j, :, j] = True, True
    allowed = cross.flatten(2).flatten(0, 1)[None, None].expand(2, 1, 30, 30)
    weights = block.grid_weights(full["criss_cross"][0])[:, None]
    want = reference(weights, energies, allowed, torch.ones(2, 30, dtype=torch.bool, device=device), k=5)
    want["lse"] = energies.masked_fill(~allowed, -math.inf).logsumexp(-1).double().mean((0, 2))
    got = row_statistics(rows["criss_cross"][0]).values()
    assert set(got) == set(want)
    for name in want:
        torch.testing.assert_close(got[name].cpu(), want[name].cpu(), msg=name)


def test_uniform_and_one_hot_rows_are_told_apart():
    block = create("non_local", 8).eval()
    with torch.no_grad(), capture(block, probes=6) as rows:
        block(torch.randn(3, 8, 4, 5))
    record = rows["non_local"][0]
    uniform = row_statistics(
        record.__class__(torch.full_like(record.weights, 1 / 20), record.queries, record.keys, probes=record.probes)
    )
    torch.testing.assert_close(uniform.entropy_ratio, torch.ones(1, dtype=torch.float64))
    one_hot = torch.zeros_like(record.weights)
    one_hot[..., 7] = 1.0  # every row on key 7: a sink
    sink = row_statistics(
        record.__class__(
            one_hot, record.queries, record.keys, probes=record.probes, valid=torch.ones_like(one_hot, dtype=torch.bool)
        )
    )
    assert sink.entropy_ratio.item() == 0.0 and sink.max_weight.item() == 1.0 and sink.same_key.item() == 1.0
    assert uniform.same_key.item() == 1.0  # ties: the first key everywhere (entropy tells them apart)


def test_records_that_weigh_no_key_grid_have_no_row_statistics():
    block = create("cbam", 8).eval()
    with torch.no_grad(), capture(block, probes=4) as rows:
        block(torch.randn(2, 8, 5, 6))
    assert all(row_statistics(r) is None for records in rows.values() for r in records)
    read = create("memory_read", 4)
    with torch.no_grad(), capture(read, probes=4) as rows:
        read(torch.randn(2, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4))
    stats = row_statistics(rows["memory_read"][0])  # one row per example, over the 5 slots
    weights = rows["memory_read"][0].weights.double()
    torch.testing.assert_close(stats.entropy, torch.distributions.Categorical(probs=weights).entropy().mean()[None])
