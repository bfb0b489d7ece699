"""Probe rows: a capture with ``probes`` records the exact attention rows of a few queries.

Every registered block is swept (``generic.probe_rows_match_the_full_map``): on every device,
the probe rows equal the rows of the full map that the eager path records, to 1e-5 in float32,
and a block that computes its rows itself (its fused path: SDPA, FlexAttention, the criss-cross
kernels) computes no full map. The other paths are checked here: FlexAttention (its forward
runs on the CPU), ``torch.compile``, ablated weights; and which queries are the probes.
"""

from __future__ import annotations

import pytest
import torch

from framework.attention import Record, ablation, available, capture, create, info, probe_index
from tests.attention.generic import probe_rows_match_the_full_map
from tests.attention.reference import randomize_

#: The blocks of which a capture with probes keeps some records whole, and why: their weights
#: relate no grid of queries to a grid of keys, so they have no rows to pick, and they are small.
KEPT_WHOLE = {
    **dict.fromkeys(
        [
            "capsule",
            "episodic_memory",
            "gc",
            "hierarchical",
            "memory_read",
            "meta_embedding",
            "ntm",
            "pma",
            "pooling",
            "alternating_co_attention",
        ],
        "learned or single queries: weights (B, [queries,] keys), no query grid",
    ),
    **dict.fromkeys(["cbam", "danet_channel", "eca", "se", "spatial"], "gates over channels or pixels"),
    **dict.fromkeys(
        [
            "attention_over_attention",
            "attention_via_attention",
            "interactive_co_attention",
            "isab",
            "multi_grained_co_attention",
            "parallel_co_attention",
            "rotatory",
        ],
        "a tuple of its parts' weights (the parts that are blocks give their own probe rows)",
    ),
    **dict.fromkeys(["gat", "gatv2", "han"], "weights per edge (or per meta-path) of a graph"),
    "axial": "two maps, along the row and along the column, each O(HW (H + W))",
    "stand_alone": "k x k windows per pixel, O(HW k^2)",
    "multi_dimensional": "a weight per key and value feature (B, h, M, N, dv)",
    **{
        name: "weights over rows that are no keys (AttentionBlock.key_positions): no key grid"
        for name in available()
        if not getattr(info(name).builder, "key_positions", True)
    },
}


@pytest.mark.parametrize("name", available())
def test_probe_rows_equal_the_rows_of_the_eager_map(name, device, monkeypatch):
    if device == "cuda":  # full float32 products, as the eager map's
        monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
        monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    whole = probe_rows_match_the_full_map(name, device)
    assert bool(whole) == (name in KEPT_WHOLE), (
        f"{name}: records kept whole: {sorted(set(whole))}; KEPT_WHOLE says {KEPT_WHOLE.get(name, 'none')}"
    )


def _check_rows(block, x, probes, **kwargs):
    """Rows of a capture with probes (on the block's own path) against the eager map's rows."""
    with torch.no_grad():
        with capture(block) as full:
            block(x, **kwargs)
        with capture(block, probes=probes) as rows:
            block(x, **kwargs)
    (name,) = full
    for whole, probed in zip(full[name], rows[name], strict=True):
        index = probe_index(whole.queries, probes)
        assert torch.equal(probed.probes, index)
        torch.testing.assert_close(probed.weights, block.grid_weights(whole).index_select(-2, index), atol=1e-5, rtol=0)
    return rows[name]


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize("causal", [False, True])
def test_flex_attention_rows_come_from_the_kernels_log_sum_exp(causal):
    torch.manual_seed(0)
    flex = create("sparse_strided", 32, num_heads=2, stride=4, impl="flex", causal=causal).eval()
    dense = create("sparse_strided", 32, num_heads=2, stride=4, impl="dense", causal=causal).eval()
    dense.load_state_dict(flex.state_dict())
    x, mask = torch.randn(2, 24, 32), torch.ones(2, 24, dtype=torch.bool)
    mask[1, 17:] = False
    with torch.no_grad(), capture(flex, probes=[0, 5, 16, 23]) as rows:
        flex(x, mask)
    with torch.no_grad(), capture(dense) as full:
        dense(x, mask)
    (record,), (eager,) = rows["sparse_strided"], full["sparse_strided"]
    torch.testing.assert_close(record.weights, eager.weights[:, :, [0, 5, 16, 23]], atol=1e-5, rtol=0)
    scores = dense.score(*(dense._split(p(x)) for p in (dense.q_proj, dense.k_proj)))
    allowed = eager.weights.ne(0)  # the pattern, causality and padding, as the dense path weighs them
    want = scores.masked_fill(~allowed, float("-inf")).logsumexp(-1)
    real = allowed.any(-1)
    torch.testing.assert_close(record.lse[real], want[real], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "name, width, x, options",
    [
        ("mhsa", 16, (2, 9, 16), {"num_heads": 2}),
        ("non_local", 8, (2, 8, 5, 6), {}),
        ("criss_cross", 16, (2, 16, 5, 6), {}),
    ],
)
def test_compiled_blocks_give_the_same_rows(name, width, x, options):
    torch.manual_seed(0)
    block = randomize_(create(name, width, **options), scale=0.3).eval()
    torch._dynamo.reset()
    compiled = torch.compile(block, backend="aot_eager")
    x = torch.randn(x)
    with torch.no_grad():
        with capture(block) as full:
            block(x)
        with capture(block, probes=4) as rows:
            compiled(x)
    for whole, probed in zip(full[name], rows[name], strict=True):
        index = probe_index(whole.queries, 4)
        torch.testing.assert_close(probed.weights, block.grid_weights(whole).index_select(-2, index), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["mhsa", "non_local", "criss_cross", "danet"])
def test_an_ablated_block_gives_the_rows_of_the_weights_it_uses(name):
    torch.manual_seed(0)
    block = randomize_(create(name, 16), scale=0.3).eval()
    x = torch.randn(2, 7, 16) if name == "mhsa" else torch.randn(2, 16, 5, 6)
    with ablation(block, "uniform"):
        records = _check_rows(block, x, 5)
    for record in records:
        valid = (
            record.valid.expand_as(record.weights)
            if record.valid is not None
            else torch.ones_like(record.weights).bool()
        )
        torch.testing.assert_close(record.weights, valid / valid.sum(-1, keepdim=True))


def test_criss_cross_rows_are_the_cross_of_each_probe_pixel():
    torch.manual_seed(0)
    block = randomize_(create("criss_cross", 16, recurrence=2), scale=0.3).eval()
    records = _check_rows(block, torch.randn(2, 16, 6, 7), [(0, 0), (2, 3), (5, 6)])
    assert len(records) == 2 and all(r.lse.shape == (2, 6, 7) for r in records)
    cross = records[0].valid[0, 1].reshape(6, 7)  # pixel (2, 3): row 2 and column 3
    want = torch.zeros(6, 7, dtype=torch.bool)
    want[2, :], want[:, 3] = True, True
    assert torch.equal(cross, want)
    torch.testing.assert_close(records[0].weights.sum(-1), torch.ones(2, 3))


def test_probes_spread_over_the_grid_or_are_named():
    assert probe_index((5,), 8).tolist() == [0, 1, 2, 3, 4]  # at most P queries: all of them
    assert probe_index((10,), 2).tolist() == [2, 7]
    lattice = probe_index((8, 16), 8)  # 2 x 4 cells of 4 x 4 pixels, their centres
    assert lattice.tolist() == [2 * 16 + c for c in (2, 6, 10, 14)] + [6 * 16 + c for c in (2, 6, 10, 14)]
    assert probe_index((4, 5), [(1, 2), 0, (1, 2)]).tolist() == [0, 7]
    with pytest.raises(ValueError, match=r"probe \(4, 0\) is outside the query grid \(4, 5\)"):
        probe_index((4, 5), [(4, 0)])
    with pytest.raises(ValueError, match="probes must be at least 1"):
        capture(create("mhsa", 8, num_heads=2), probes=0)


def test_looks_at_a_query_that_is_no_probe_names_the_probes():
    block = create("non_local", 8).eval()
    with torch.no_grad(), capture(block, probes=[(1, 1), (3, 4)]) as rows:
        block(torch.randn(1, 8, 5, 6))
    record = rows["non_local"][0]
    assert block.looks(record, (3, 4)).shape == (1, 5, 6)
    with pytest.raises(
        ValueError, match=r"query \(2, 2\) is not among the record's 2 probe queries \(\(1, 1\), \(3, 4\)\)"
    ):
        block.looks(record, (2, 2))


def test_a_picture_of_probe_rows_draws_the_probe_nearest_the_middle():
    block = create("non_local", 8).eval()
    with torch.no_grad(), capture(block, probes=4) as rows:
        block(torch.randn(1, 8, 12, 16))
    record = rows["non_local"][0]
    assert record.weights.shape == (1, 4, 12 * 16) and isinstance(record, Record)
    picture = block.weights_picture(record, "example 0")
    assert "where query pixel (3, 4) of 12 x 16 looks" in " ".join(
        picture.get_suptitle().split()
    )  # probes (3 | 9, 4 | 12)
    torch.testing.assert_close(
        torch.as_tensor(picture.axes[0].images[0].get_array().data), record.weights[0, 0].reshape(12, 16).double()
    )
