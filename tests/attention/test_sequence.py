"""Sequence blocks against independent formulas (outputs and gradients, float64)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.func import functional_call

from framework.attention import AttentionOutput, ShapeError, capture, create, sequence_mask
from framework.attention.cross import (
    AlternatingCoAttention,
    LuongLocalAttention,
    ParallelCoAttention,
    RotatoryAttention,
)
from framework.attention.pooling import AttentionPooling, HierarchicalAttention, frobenius_penalty
from framework.attention.sequence import LocalAttention, MultiHeadSelfAttention, band_mask
from tests.attention.reference import assert_matches_reference, randomize_

B, N, D = 3, 6, 8


def lengths_mask(lengths: list[int], n: int) -> torch.Tensor:
    """(B, n) right-padded mask, True = a real token."""
    return torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]


def softmax_where(e: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """exp(e) / sum exp(e) over the allowed entries of the last axis; all-zero rows where none is."""
    w = torch.exp(e - e.detach().amax(-1, keepdim=True)) * allowed
    return w / w.sum(-1, keepdim=True).clamp_min(1e-30)


def field(reference, name):
    """The reference's ``AttentionOutput`` field ``name`` (outputs and weights are compared in turn)."""
    return lambda *args, **kwargs: getattr(reference(*args, **kwargs), name)


WEIGHTS = {"need_weights": True, "output": lambda out: out.weights}
OUTPUT = {"need_weights": True, "output": lambda out: out.output}


# --- multi-head and local self-attention -------------------------------------------------


def naive_self_attention(block, x, allowed, need_weights=False):
    """softmax(Q K^T / sqrt(d)) V per head with explicit matrices; allowed (B|1, N, N)."""
    h = block.num_heads
    d = D // h
    q = (x @ block.q_proj.weight.T + block.q_proj.bias).reshape(x.shape[0], -1, h, d)
    k = (x @ block.k_proj.weight.T + block.k_proj.bias).reshape(x.shape[0], -1, h, d)
    v = (x @ block.v_proj.weight.T + block.v_proj.bias).reshape(x.shape[0], -1, h, d)
    scores = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(d)
    weights = softmax_where(scores, allowed[:, None])
    context = torch.einsum("bhij,bjhd->bihd", weights, v).reshape(x.shape[0], -1, D)
    out = context @ block.out_proj.weight.T + block.out_proj.bias
    return AttentionOutput(out, weights) if need_weights else out


def mhsa_reference(block, x, mask=None, *, attn_mask=None, need_weights=False):
    n = x.shape[1]
    allowed = torch.ones(1, n, n, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & mask[:, None, :]
    if attn_mask is not None:
        allowed = allowed & attn_mask
    if block.causal:
        allowed = allowed & (torch.arange(n)[:, None] >= torch.arange(n)[None, :])
    return naive_self_attention(block, x, allowed, need_weights)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("need_weights", [False, True])
def test_mhsa_matches_naive_formula(causal, need_weights, device):
    block = randomize_(MultiHeadSelfAttention(D, num_heads=2, causal=causal))
    x, mask = torch.randn(B, N, D), lengths_mask([6, 3, 0], N)
    if need_weights:  # the explicit path; without weights the fused kernel runs
        assert_matches_reference(block, field(mhsa_reference, "output"), x, mask, **OUTPUT, device=device)
        assert_matches_reference(block, field(mhsa_reference, "weights"), x, mask, **WEIGHTS, device=device)
    else:
        assert_matches_reference(block, mhsa_reference, x, mask, device=device)
    attn_mask = torch.rand(B, N, N) > 0.3
    assert_matches_reference(block, mhsa_reference, x, mask, attn_mask=attn_mask, device=device)


def torch_mha_reference(block, x, mask, *, need_weights=False):
    """torch.nn.MultiheadAttention run with the block's weights (True = ignore in its masks)."""
    mha = nn.MultiheadAttention(D, block.num_heads, batch_first=True, dtype=x.dtype)
    v_proj = block.v_proj.weight, block.v_proj.bias
    if need_weights:  # the weights do not depend on W_V; keep the packed matrix from saying they do
        v_proj = tuple(p.detach() for p in v_proj)
    params = {
        "in_proj_weight": torch.cat([block.q_proj.weight, block.k_proj.weight, v_proj[0]]),
        "in_proj_bias": torch.cat([block.q_proj.bias, block.k_proj.bias, v_proj[1]]),
        "out_proj.weight": block.out_proj.weight,
        "out_proj.bias": block.out_proj.bias,
    }
    n = x.shape[1]
    causal = torch.ones(n, n, dtype=torch.bool).triu(1) if block.causal else None
    out, weights = functional_call(
        mha,
        params,
        (x, x, x),
        {"key_padding_mask": ~mask, "attn_mask": causal, "need_weights": need_weights, "average_attn_weights": False},
    )
    return AttentionOutput(out, weights) if need_weights else out


@pytest.mark.parametrize("causal", [False, True])
def test_mhsa_matches_torch_multihead_attention(causal, device):
    block = randomize_(MultiHeadSelfAttention(D, num_heads=2, causal=causal))
    x, mask = torch.randn(B, N, D), lengths_mask([6, 4, 2], N)
    assert_matches_reference(block, torch_mha_reference, x, mask, device=device)
    assert_matches_reference(block, field(torch_mha_reference, "weights"), x, mask, **WEIGHTS, device=device)


def local_reference(block, x, mask=None, *, need_weights=False):
    i, j = torch.arange(x.shape[1])[:, None], torch.arange(x.shape[1])[None, :]
    allowed = ((i - j).abs() <= block.window)[None]
    if block.causal:
        allowed = allowed & (j <= i)
    if mask is not None:
        allowed = allowed & mask[:, None, :]
    return naive_self_attention(block, x, allowed, need_weights)


@pytest.mark.parametrize("causal", [False, True])
def test_local_matches_naive_formula(causal, device):
    block = randomize_(LocalAttention(D, window=2, num_heads=2, causal=causal))
    x, mask = torch.randn(B, N, D), lengths_mask([6, 3, 0], N)
    assert_matches_reference(block, local_reference, x, mask, device=device)
    assert_matches_reference(block, field(local_reference, "output"), x, mask, **OUTPUT, device=device)
    assert_matches_reference(block, field(local_reference, "weights"), x, mask, **WEIGHTS, device=device)


@pytest.mark.parametrize("causal", [False, True])
def test_local_respects_the_band(causal):
    window, n = 2, 7
    block = randomize_(LocalAttention(D, window=window, causal=causal)).eval()
    x = torch.randn(1, n, D)
    base = block(x)
    for j in range(n):
        changed = x.clone()
        changed[:, j] += torch.randn(D)
        moved = (block(changed) - base).abs().amax(-1)[0] > 1e-6  # which outputs i moved
        may_move = torch.tensor([abs(i - j) <= window and (not causal or j <= i) for i in range(n)])
        assert torch.equal(moved, may_move), f"token {j} reached outputs {moved.nonzero().flatten().tolist()}"


def test_local_band_is_built_once():
    block = LocalAttention(D, window=3)
    x = torch.randn(2, 5, D)
    block(x)
    before = band_mask.cache_info()
    block(x)
    after = band_mask.cache_info()
    assert after.misses == before.misses and after.hits == before.hits + 1


def test_local_band_first_built_in_inference_mode_still_trains():
    block, x = LocalAttention(D, window=1), torch.randn(1, 9, D)  # a length no other test builds
    with torch.inference_mode():  # e.g. Lightning's sanity check before training
        block(x, need_weights=True)
    block(x, need_weights=True).output.sum().backward()
    assert block.q_proj.weight.grad is not None


# --- Luong local-p / local-m --------------------------------------------------------------


def luong_reference(block, query, keys, *, key_padding_mask=None, positions=None, need_weights=False):
    """Per example and query step: p_t, the window, softmax of h^T W_a k_s, the Gaussian."""
    single = query.dim() == 2
    q = query[:, None] if single else query
    b, m, n = q.shape[0], q.shape[1], keys.shape[1]
    valid = torch.ones(b, n, dtype=torch.bool) if key_padding_mask is None else key_padding_mask
    w_a, sigma = block.score.weight[0], block.window / 2
    outputs, all_weights = [], []
    for e in range(b):
        length = int(valid[e].sum())
        for t in range(m):
            h = q[e, t]
            if block.position == "predictive":
                p = length * torch.sigmoid(block.position_out.weight[0] @ torch.tanh(block.position_hidden.weight @ h))
            else:
                p = torch.tensor(float(t)) if positions is None else positions.reshape(b, m)[e, t].double()
            window = [s for s in range(n) if valid[e, s] and abs(s - float(p.detach())) <= block.window]
            a = torch.zeros(n, dtype=q.dtype)
            if window:
                scores = torch.stack([h @ w_a @ keys[e, s] for s in window])
                align = torch.softmax(scores, 0)
                for idx, s in enumerate(window):
                    gauss = torch.exp(-((s - p) ** 2) / (2 * sigma**2)) if block.position == "predictive" else 1.0
                    a = a + torch.nn.functional.one_hot(torch.tensor(s), n).to(q.dtype) * align[idx] * gauss
            all_weights.append(a)
            outputs.append(a @ keys[e])
    out, weights = torch.stack(outputs).reshape(b, m, -1), torch.stack(all_weights).reshape(b, m, n)
    if single:
        out, weights = out[:, 0], weights[:, 0]
    return AttentionOutput(out, weights) if need_weights else out


@pytest.mark.parametrize("position", ["predictive", "monotonic"])
def test_local_p_matches_reference(position, device):
    block = randomize_(LuongLocalAttention(D, key_dim=6, window=2, position=position), scale=1.0).double()
    query, keys, mask = torch.randn(B, 4, D).double(), torch.randn(B, 7, 6).double(), lengths_mask([7, 4, 0], 7)
    assert_matches_reference(block, luong_reference, query, keys, key_padding_mask=mask, device=device)
    assert_matches_reference(
        block, field(luong_reference, "weights"), query, keys, key_padding_mask=mask, **WEIGHTS, device=device
    )
    assert_matches_reference(block, luong_reference, query[:, 0], keys, key_padding_mask=mask, device=device)
    weights = block(query, keys, key_padding_mask=mask, need_weights=True).weights
    assert weights.shape == (B, 4, 7) and not weights[2].any() and not weights[1, :, 4:].any()


def test_local_p_monotonic_positions_override(device):
    block = randomize_(LuongLocalAttention(D, window=1, position="monotonic")).double()
    query, keys = torch.randn(2, 3, D).double(), torch.randn(2, 6, D).double()
    positions = torch.tensor([[5, 0, 2], [1, 1, 4]])
    assert_matches_reference(block, luong_reference, query, keys, positions=positions, device=device)
    assert_matches_reference(block, luong_reference, query[:, 0], keys, positions=positions[:, 0], device=device)
    weights = block(query, keys, positions=positions, need_weights=True).weights
    assert weights[0, 0, :4].eq(0).all() and weights[0, 0, 4:].sum().item() == pytest.approx(1.0)


# --- attention pooling and HAN ----------------------------------------------------------


def pooling_weights(pool, x, mask):
    """A = softmax(W2 tanh(W1 H^T + b)) over the valid tokens: (B, r, N)."""
    hidden = torch.tanh(torch.einsum("hd,bnd->bnh", pool.key_map.weight, x) + pool.key_map.bias)
    return softmax_where(torch.einsum("rh,bnh->brn", pool.queries, hidden), mask[:, None, :])


def pooling_reference(block, x, mask, *, need_weights=False):
    weights = pooling_weights(block, x, mask)
    out = torch.einsum("brn,bnd->brd", weights, x)
    out = out[:, 0] if block.num_queries == 1 else out
    return AttentionOutput(out, weights) if need_weights else out


@pytest.mark.parametrize("num_queries", [1, 3])
def test_pooling_matches_reference(num_queries, device):
    block = randomize_(AttentionPooling(D, hidden=5, num_queries=num_queries)).double()
    x, mask = torch.randn(B, N, D).double(), lengths_mask([6, 2, 0], N)
    assert_matches_reference(block, pooling_reference, x, mask, device=device)
    assert_matches_reference(block, field(pooling_reference, "weights"), x, mask, **WEIGHTS, device=device)
    assert block(x, mask).shape == ((B, D) if num_queries == 1 else (B, num_queries, D))
    assert not block(x, mask)[2].any()


def test_frobenius_penalty_by_hand():
    weights = torch.tensor([[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    # A A^T - I = [[0, .5], [.5, -.5]] -> 0.75 for the first example, 0 for the second.
    assert frobenius_penalty(weights).item() == pytest.approx(0.375)


def hierarchical_reference(block, x, mask):
    b, s, w, d = x.shape
    sentence_vectors = []
    for i in range(s):  # the word pooling, one sentence at a time
        a = pooling_weights(block.words, x[:, i], mask[:, i])[:, 0]
        sentence_vectors.append(torch.einsum("bw,bwd->bd", a, x[:, i]))
    sentences = torch.stack(sentence_vectors, 1)
    if block.sentence_encoder is not None:
        sentences = block.sentence_encoder(sentences, mask.any(-1))
    a = pooling_weights(block.sentences, sentences, mask.any(-1))[:, 0]
    return torch.einsum("bs,bsd->bd", a, sentences)


class MaskedLinear(nn.Linear):
    """A sentence encoder that uses its mask: padded sentences become b (not 0)."""

    def forward(self, x, mask):
        return torch.where(mask.unsqueeze(-1), super().forward(x), self.bias)


@pytest.mark.parametrize("encoder", [False, True])
def test_hierarchical_matches_reference(encoder, device):
    block = randomize_(
        HierarchicalAttention(D, hidden=6, sentence_encoder=MaskedLinear(D, D) if encoder else None)
    ).double()
    x = torch.randn(B, 3, 4, D).double()
    mask = torch.stack([lengths_mask([4, 2, 0], 4), lengths_mask([1, 3, 4], 4), lengths_mask([0, 0, 0], 4)])
    assert_matches_reference(block, hierarchical_reference, x, mask, device=device)
    assert not block(x, mask)[2].any()


# --- co-attention and rotatory attention -------------------------------------------------


def attend(scores, values):
    """softmax(scores) values, zeros when there is nothing to attend."""
    if scores.numel() == 0:
        return values.new_zeros(values.shape[-1]), scores
    a = torch.softmax(scores, 0)
    return a @ values, a


def parallel_reference(block, x1, x2, mask1, mask2):
    """Per example on the valid positions only, so padding cannot leak."""
    c1s, c2s = [], []
    w_a, w1, w2 = block.affinity.weight[0], block.proj1.weight, block.proj2.weight
    for e in range(x1.shape[0]):
        k1, k2 = x1[e][mask1[e]], x2[e][mask2[e]]
        affinity = torch.tanh(k1 @ w_a @ k2.T)
        h1 = torch.tanh(k1 @ w1.T + affinity @ (k2 @ w2.T))
        h2 = torch.tanh(k2 @ w2.T + affinity.T @ (k1 @ w1.T))
        c1s.append(attend(h1 @ block.score1.weight[0], k1)[0])
        c2s.append(attend(h2 @ block.score2.weight[0], k2)[0])
    return torch.stack(c1s), torch.stack(c2s)


def additive(score, query, keys):
    """w^T tanh(W_q q + W_k k_l + b) from an AdditiveScore's parameters."""
    hidden = torch.tanh(query @ score.query_weight[0] + keys @ score.key_weight[0] + score.bias[0, 0])
    return hidden @ score.out[0, :, 0]


def alternating_reference(block, x1, x2, mask1, mask2):
    c1s, c2s = [], []
    pool = block.summary
    for e in range(x1.shape[0]):
        k1, k2 = x1[e][mask1[e]], x2[e][mask2[e]]
        s = attend(torch.tanh(k1 @ pool.key_map.weight.T + pool.key_map.bias) @ pool.queries[0], k1)[0]
        c2 = attend(additive(block.attend2.score, s, k2), k2)[0]
        c1s.append(attend(additive(block.attend1.score, c2, k1), k1)[0])
        c2s.append(c2)
    return torch.stack(c1s), torch.stack(c2s)


@pytest.mark.parametrize(
    "cls, reference", [(ParallelCoAttention, parallel_reference), (AlternatingCoAttention, alternating_reference)]
)
def test_co_attention_matches_reference(cls, reference, device):
    block = randomize_(cls(D, 6, hidden=5)).double()
    x1, x2 = torch.randn(B, 5, D).double(), torch.randn(B, 4, 6).double()
    mask1, mask2 = lengths_mask([5, 3, 0], 5), lengths_mask([4, 1, 2], 4)
    for i in range(2):
        assert_matches_reference(
            block, lambda *a, i=i: reference(*a)[i], x1, x2, mask1, mask2, output=lambda out, i=i: out[i], device=device
        )
    c1, c2 = block(x1, x2, mask1, mask2)
    assert c1.shape == (B, D) and c2.shape == (B, 6) and not c1[2].any()


def rotatory_reference(block, left, target, right, left_mask, target_mask, right_mask):
    def score(attention, query, keys):  # tanh(k^T W q + b)
        return torch.tanh(keys @ attention.score.weight[0] @ query + attention.score.bias.flatten())

    rows = []
    for e in range(left.shape[0]):
        left_row, t, r = left[e][left_mask[e]], target[e][target_mask[e]], right[e][right_mask[e]]
        r_t = t.mean(0) if len(t) else t.new_zeros(D)
        r_lt = r_rt = r_t
        for _ in range(block.hops):
            r_l = attend(score(block.left, r_lt, left_row), left_row)[0]
            r_r = attend(score(block.right, r_rt, r), r)[0]
            r_lt = attend(score(block.left_target, r_l, t), t)[0]
            r_rt = attend(score(block.right_target, r_r, t), t)[0]
        rows.append(torch.cat([r_l, r_r, r_lt, r_rt]))
    return torch.stack(rows)


@pytest.mark.parametrize("hops", [1, 2])
def test_rotatory_matches_reference(hops, device):
    block = randomize_(RotatoryAttention(D, hops=hops)).double()
    left, target, right = (torch.randn(B, n, D).double() for n in (5, 3, 4))
    masks = lengths_mask([5, 0, 2], 5), lengths_mask([3, 1, 2], 3), lengths_mask([4, 3, 0], 4)
    assert_matches_reference(block, rotatory_reference, left, target, right, *masks, device=device)
    out = block(left, target, right, *masks)
    assert out.shape == (B, 4 * D) and not out[1, :D].any() and not out[2, D : 2 * D].any()


# --- capture, shape errors, registry ---------------------------------------------------------


def test_capture_records_documented_weights():
    x, mask = torch.randn(2, 5, D), lengths_mask([5, 3], 5)
    for block, shape in [
        (MultiHeadSelfAttention(D, num_heads=2), (2, 2, 5, 5)),
        (LocalAttention(D, window=1), (2, 1, 5, 5)),
        (AttentionPooling(D, num_queries=3), (2, 3, 5)),
        (AttentionPooling(D), (2, 1, 5)),
    ]:
        with capture(block) as maps:
            block(x, mask)
        assert maps[block.block_name][0].weights.shape == shape and maps[block.block_name][0].keys == (5,)
    local_p = LuongLocalAttention(D)
    with capture(local_p) as maps:
        local_p(torch.randn(2, 3, D), x, key_padding_mask=mask)
    assert maps["local_p"][0].weights.shape == (2, 3, 5) and maps["local_p"][0].queries == (3,)

    han = HierarchicalAttention(D)
    with capture(han) as maps:
        han(torch.randn(2, 3, 4, D), torch.rand(2, 3, 4) > 0.3)
    words, sentences = maps["hierarchical"][0].weights
    assert (words.shape, sentences.shape) == ((2, 3, 4), (2, 3))
    assert maps["words"][0].weights.shape == (6, 1, 4) and maps["sentences"][0].weights.shape == (2, 1, 3)

    x2 = torch.randn(2, 4, D)
    parallel, alternating = ParallelCoAttention(D), AlternatingCoAttention(D)
    with capture(parallel) as maps:
        parallel(x, x2, mask)
    assert [w.shape for w in maps["parallel_co_attention"][0].weights] == [(2, 5, 4), (2, 5), (2, 4)]
    with capture(alternating) as maps:
        alternating(x, x2, mask)
    assert [w.shape for w in maps["alternating_co_attention"][0].weights] == [(2, 5), (2, 4), (2, 5)]
    assert {"summary", "attend2", "attend1"} <= set(maps)

    rotatory = RotatoryAttention(D, hops=2)
    with capture(rotatory, "rotatory") as maps:
        rotatory(x, torch.randn(2, 3, D), x2)
    assert len(maps["rotatory"]) == 2
    assert [w.shape for w in maps["rotatory"][1].weights] == [(2, 5), (2, 4), (2, 3), (2, 3)]


@pytest.mark.parametrize(
    "block, args, message",
    [
        (
            MultiHeadSelfAttention(D, 2),
            (torch.randn(2, 5, 7),),
            r"mhsa: x must have shape \(B, N, 8\), got \(2, 5, 7\)",
        ),
        (LocalAttention(D), (torch.randn(5, D),), r"local: x must have shape \(B, N, 8\), got \(5, 8\)"),
        (
            MultiHeadSelfAttention(D, 2),
            (torch.randn(2, 5, D), torch.ones(2, 4, dtype=torch.bool)),
            r"mhsa: mask must have shape \(2, 5\), got \(2, 4\)",
        ),
        (
            LuongLocalAttention(D),
            (torch.randn(2, 3, D), torch.randn(3, 4, D)),
            r"local_p: keys must have shape \(2, N, 8\)",
        ),
        (AttentionPooling(D), (torch.randn(2, 5, 4),), r"pooling: x must have shape \(B, N, 8\), got \(2, 5, 4\)"),
        (HierarchicalAttention(D), (torch.randn(2, 5, D),), r"hierarchical: x must have shape \(B, S, W, 8\)"),
        (
            ParallelCoAttention(D, 4),
            (torch.randn(2, 5, D), torch.randn(2, 3, D)),
            r"parallel_co_attention: x2 must have shape \(2, N2, 4\)",
        ),
        (
            AlternatingCoAttention(D),
            (torch.randn(2, 5, D), torch.randn(2, 3, D), torch.ones(2, 4, dtype=torch.bool)),
            r"alternating_co_attention: mask1 must have shape \(2, 5\), got \(2, 4\)",
        ),
        (
            RotatoryAttention(D),
            (torch.randn(2, 5, D), torch.randn(2, 3, D), torch.randn(2, 4, 6)),
            r"rotatory: right must have shape \(2, N, 8\)",
        ),
    ],
)
def test_shape_errors_name_block_tensor_and_shapes(block, args, message):
    with pytest.raises(ShapeError, match=message):
        block(*args)


def test_sequence_mask_checks_the_inputs_and_ands_the_masks():
    """The one helper of the sequence blocks: attn_mask's shape and dtype named with the block;
    padding, attn_mask, the block's structure and the causal triangle and-ed, (B|1, h|1, N|1, N)."""
    block, x = MultiHeadSelfAttention(D, 2), torch.randn(2, 5, D)
    with pytest.raises(
        ShapeError, match=r"mhsa: attn_mask must have shape \(5, 5\), \(2, 5, 5\) or \(2, 2, 5, 5\), got \(5, 4\)"
    ):
        block(x, attn_mask=torch.ones(5, 4, dtype=torch.bool))
    with pytest.raises(ShapeError, match=r"sparse_strided: attn_mask must have shape .* got \(2, 3, 5, 5\)"):
        create("sparse_strided", D, num_heads=2)(x, attn_mask=torch.ones(2, 3, 5, 5, dtype=torch.bool))
    with pytest.raises(
        ValueError, match=r"synthesizer_dense: attn_mask must be boolean \(True = may attend\), got torch.float32"
    ):
        create("synthesizer_dense", D, num_heads=2, max_len=8)(x, attn_mask=torch.ones(5, 5))

    mask, attn_mask = lengths_mask([5, 3], 5), torch.rand(2, 5, 5) > 0.3
    band = band_mask(5, 1, x.device)
    allowed = sequence_mask(block, x, mask, attn_mask, structure=lambda n, device: band_mask(n, 1, device), causal=True)
    expected = mask[:, None, None, :] & attn_mask[:, None] & band & torch.ones(5, 5, dtype=torch.bool).tril()
    assert allowed.shape == (2, 1, 5, 5) and torch.equal(allowed, expected)
    assert sequence_mask(block, x, mask).shape == (2, 1, 1, 5) and sequence_mask(block, x) is None
    assert torch.equal(sequence_mask(block, x, None, attn_mask[:1]), attn_mask[:1, None])  # B = 1 broadcasts


@pytest.mark.parametrize(
    "name, inputs, shape",
    [
        ("mhsa", (torch.randn(2, 5, D),), (2, 5, D)),
        ("local", (torch.randn(2, 5, D),), (2, 5, D)),
        ("local_p", (torch.randn(2, 3, D), torch.randn(2, 5, D)), (2, 3, D)),
        ("pooling", (torch.randn(2, 5, D),), (2, D)),
        ("hierarchical", (torch.randn(2, 3, 4, D),), (2, D)),
        ("parallel_co_attention", (torch.randn(2, 5, D), torch.randn(2, 4, D)), (2, D)),
        ("alternating_co_attention", (torch.randn(2, 5, D), torch.randn(2, 4, D)), (2, D)),
        ("rotatory", (torch.randn(2, 5, D), torch.randn(2, 3, D), torch.randn(2, 4, D)), (2, 4 * D)),
    ],
)
def test_create_builds_each_block(name, inputs, shape):
    block = create(name, D)
    out = block(*inputs)
    out = out[0] if isinstance(out, tuple) else out
    assert block.block_name == name and out.shape == shape and torch.isfinite(out).all()
