"""Efficient and structured self-attention against independent formulas (outputs and gradients,
float64, with padding): Linformer, Performer (FAVOR+), the Sparse Transformer's strided and
fixed patterns (dense and FlexAttention), adaptive span, Synthesizer, Transformer-XL."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from framework.attention import AttentionOutput, create
from framework.attention.sequence.adaptive_span import span_loss
from framework.attention.sequence.performer import Performer, orthogonal_features
from framework.attention.sequence.sparse import SparseAttention
from framework.attention.sequence.transformer_xl import TransformerXLAttention
from framework.layers import AttentionEncoder
from tests.attention.reference import assert_matches_reference, randomize_

B, N, D, H = 3, 7, 8, 2
LENGTHS = [7, 4, 0]  # a full example, a padded one, one with no token


def _inputs(n: int = N, dim: int = D, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    lengths = [min(length, n) for length in LENGTHS]
    return torch.randn(B, n, dim, generator=g), torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]


def _heads(x, linear):
    """(B, L, D) -> (B, h, L, d) through a projection's parameters."""
    return (x @ linear.weight.T + linear.bias).reshape(x.shape[0], x.shape[1], H, -1).transpose(1, 2)


def _out(block, context):
    return context.transpose(1, 2).flatten(2) @ block.out_proj.weight.T + block.out_proj.bias


def normalised(w):
    """w / its sum over the last axis; zeros where the sum is zero."""
    total = w.sum(-1, keepdim=True)
    return w / torch.where(total > 0, total, 1.0)


def softmax_over(scores, allowed):
    """softmax over the allowed entries of the last axis; zeros where none is."""
    return normalised(torch.exp(scores - scores.detach().amax(-1, keepdim=True)) * allowed)


def weights_too(reference):
    """(output reference, weights reference) from a reference returning (out, weights)."""
    return (lambda *a, **k: reference(*a, **k)[0]), (lambda *a, **k: reference(*a, **k)[1])


def check(block, reference, *inputs, device, **kwargs):
    """Outputs and gradients on the fused path, then outputs and weights on the explicit one."""
    out_ref, weights_ref = weights_too(reference)
    assert_matches_reference(block, out_ref, *inputs, device=device, **kwargs)
    assert_matches_reference(
        block, out_ref, *inputs, device=device, need_weights=True, output=lambda out: out.output, **kwargs
    )
    assert_matches_reference(
        block, weights_ref, *inputs, device=device, need_weights=True, output=lambda out: out.weights, **kwargs
    )


# --- Linformer -----------------------------------------------------------------------------


def linformer_reference(block, x, mask, need_weights=False):
    """Dense softmax attention over the projected keys E (K * mask) and values F (V * mask)."""
    n = x.shape[1]
    q, k, v = (_heads(x, p) for p in (block.q_proj, block.k_proj, block.v_proj))
    keep = mask[:, None, :, None].double()
    e = block.key_rows[:, :n]
    f = e if block.value_rows is None else block.value_rows[:, :n]
    k_low = torch.einsum("rn,bhnd->bhrd", e, k * keep)
    v_low = torch.einsum("rn,bhnd->bhrd", f, v * keep)
    weights = torch.softmax(torch.einsum("bhid,bhrd->bhir", q, k_low) / math.sqrt(q.shape[-1]), -1)
    return _out(block, weights @ v_low), weights


@pytest.mark.parametrize("share_kv", [False, True])
def test_linformer_is_dense_attention_over_projected_keys(share_kv, device):
    block = randomize_(create("linformer", D, num_heads=H, rank=3, max_len=10, share_kv=share_kv))
    x, mask = _inputs()
    check(block, linformer_reference, x, mask, device=device)


def test_linformer_refuses_long_inputs_and_token_masks():
    block = create("linformer", D, num_heads=H, max_len=6)
    with pytest.raises(ValueError, match="a sequence of 7 tokens is longer than max_len=6"):
        block(torch.randn(1, 7, D))
    with pytest.raises(ValueError, match="attn_mask is not supported"):
        block(torch.randn(1, 5, D), attn_mask=torch.ones(5, 5, dtype=torch.bool))


# --- Performer -----------------------------------------------------------------------------


def performer_reference(block, x, mask, need_weights=False):
    """phi(x) = exp(W x' - |x'|^2 / 2) / sqrt(m) written out, no stabiliser; explicit sums."""
    q, k, v = (_heads(x, p) for p in (block.q_proj, block.k_proj, block.v_proj))
    d, w = q.shape[-1], block.projection.double()

    def phi(t):
        t = t / d**0.25
        return torch.exp(t @ w.T - (t * t).sum(-1, keepdim=True) / 2) / math.sqrt(w.shape[0])

    kernel = phi(q) @ phi(k).transpose(-1, -2)  # (B, h, N, N)
    n = x.shape[1]
    allowed = mask[:, None, None, :].expand(-1, 1, n, -1)
    if block.causal:
        allowed = allowed & torch.ones(n, n, dtype=torch.bool).tril()
    weights = normalised(kernel * allowed)
    return _out(block, weights @ v), weights


@pytest.mark.parametrize("causal, chunk", [(False, 64), (True, 64), (True, 2), (True, 3)])
def test_performer_equals_the_formula_of_its_own_features(causal, chunk, device):
    """The causal path in one chunk, and in chunks of 2 and 3 (running sums across chunks, a padded last one)."""
    block = randomize_(create("performer", D, num_heads=H, features=5, causal=causal), scale=0.4).eval()
    block.chunk = chunk
    x, mask = _inputs()
    check(block, performer_reference, x, mask, device=device)


def test_orthogonal_features_estimate_the_softmax_kernel_without_bias():
    torch.manual_seed(0)
    d, features = 8, 65536
    w = orthogonal_features(features, d, dtype=torch.float64)
    q, k = (
        torch.randn(4, d, dtype=torch.float64) * 0.6 / d**0.25,
        torch.randn(4, d, dtype=torch.float64) * 0.6 / d**0.25,
    )
    estimate = (
        torch.exp(q @ w.T - (q * q).sum(-1, keepdim=True) / 2) * torch.exp(k @ w.T - (k * k).sum(-1, keepdim=True) / 2)
    ).mean(-1)
    torch.testing.assert_close(estimate, torch.exp((q * k).sum(-1)), rtol=0.02, atol=0)


def test_performer_with_many_features_approximates_softmax_attention():
    def max_error(features: int) -> float:
        torch.manual_seed(0)
        block = randomize_(Performer(16, num_heads=2, features=features), scale=0.15).eval().double()
        x, mask = _inputs(n=10, dim=16)
        q, k = _heads(x.double(), block.q_proj), _heads(x.double(), block.k_proj)
        exact = softmax_over(q @ k.transpose(-1, -2) / math.sqrt(8), mask[:, None, None, :])
        return (block(x.double(), mask, need_weights=True).weights - exact).abs().max().item()

    many, few = max_error(4096), max_error(16)
    assert many < 0.15 and few > 2 * many, (many, few)


def test_performer_redraws_its_features_while_training_only():
    block = Performer(D, num_heads=H, features=6, redraw_interval=2)
    x = torch.randn(2, 5, D)
    first = block.projection.clone()
    block(x)
    assert torch.equal(block.projection, first), "the first training call keeps the features"
    block(x)
    second = block.projection.clone()
    assert not torch.equal(second, first), "the second (interval 2) draws new ones"
    block.eval()
    for _ in range(3):
        block(x)
    assert torch.equal(block.projection, second) and int(block.calls) == 2
    block.redraw()
    assert not torch.equal(block.projection, second)
    rows = block.projection[:4] / block.projection[:4].norm(dim=1, keepdim=True)  # one orthogonal block (d_h = 4)
    torch.testing.assert_close(rows @ rows.T, torch.eye(4), atol=1e-5, rtol=0)


# --- Sparse Transformer patterns -------------------------------------------------------------


def sparse_allowed(block, n):
    """The pattern by its definition, entry by entry."""
    stride, c = block.stride, block.summary
    allowed = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        for j in range(n):
            if block.pattern == "strided":
                ok = abs(i - j) < stride or (i - j) % stride == 0
            else:
                ok = i // stride == j // stride or j % stride >= stride - c
            allowed[i, j] = ok and (j <= i or not block.causal)
    return allowed


def sparse_reference(block, x, mask, need_weights=False):
    q, k, v = (_heads(x, p) for p in (block.q_proj, block.k_proj, block.v_proj))
    allowed = sparse_allowed(block, x.shape[1])[None, None] & mask[:, None, None, :]
    weights = softmax_over(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), allowed)
    return _out(block, weights @ v), weights


@pytest.mark.parametrize("pattern, causal", [("strided", False), ("strided", True), ("fixed", False), ("fixed", True)])
def test_sparse_patterns_equal_dense_masked_attention(pattern, causal, device):
    block = randomize_(create(f"sparse_{pattern}", D, num_heads=H, stride=3, summary=1, causal=causal, impl="dense"))
    x, mask = _inputs(n=10)
    check(block, sparse_reference, x, mask, device=device)
    weights = block(x.double(), mask, need_weights=True).weights
    assert not (weights[0] * ~sparse_allowed(block, 10)).any(), "no weight outside the pattern"


@pytest.mark.parametrize("pattern", ["strided", "fixed"])
@pytest.mark.parametrize("causal", [False, True])
def test_sparse_flex_path_equals_the_dense_path(pattern, causal, device):
    """FlexAttention runs forward on the CPU (the unfused reference; no backward there in torch
    2.11) and forward and backward on CUDA (compiled kernels), with a 16-wide head as they need."""
    torch.manual_seed(0)
    dense = randomize_(
        SparseAttention(32, pattern, stride=4, summary=2, num_heads=2, causal=causal, impl="dense"), scale=0.2
    ).to(device)
    flex = SparseAttention(32, pattern, stride=4, summary=2, num_heads=2, causal=causal, impl="flex").to(device)
    flex.load_state_dict(dense.state_dict())
    x, mask = _inputs(n=37, dim=32)
    x, mask = x.to(device), mask.to(device)
    if device == "cpu":
        with torch.no_grad():
            torch.testing.assert_close(flex(x, mask), dense(x, mask), atol=1e-5, rtol=1e-4)
        return
    assert flex.uses_flex(x, False, None) and dense.uses_flex(x, False, None) is False
    x = x.requires_grad_()
    got, want = flex(x, mask), dense(x, mask)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-3)
    cotangent = torch.randn_like(got)
    for g, w in zip(
        torch.autograd.grad(got, [x, *flex.parameters()], cotangent),
        torch.autograd.grad(want, [x, *dense.parameters()], cotangent),
    ):
        torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-3)


def test_sparse_auto_takes_the_dense_path_off_cuda_and_for_weights():
    block = SparseAttention(32, num_heads=2)
    x = torch.randn(1, 9, 32)
    assert not block.uses_flex(x, False, None)
    with pytest.raises(ValueError, match="impl='flex' gives no weights"):
        SparseAttention(32, num_heads=2, impl="flex")(x, need_weights=True)
    with pytest.raises(ValueError, match="pattern must be one of strided, fixed"):
        SparseAttention(32, pattern="banded")


# --- adaptive span ---------------------------------------------------------------------------


def span_reference(block, x, mask, attn_mask=None, need_weights=False):
    """a_ij = m(x_ij) exp(e_ij) / sum_r m(x_ir) exp(e_ir), m(x) = clamp((R + z - x) / R, 0, 1)."""
    q, k, v = (_heads(x, p) for p in (block.q_proj, block.k_proj, block.v_proj))
    n = x.shape[1]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    distance = (i - j) if block.causal else (i - j).abs()
    z = block.max_span * block.span_fraction.clamp(0, 1)
    soft = ((block.ramp + z[:, None, None] - distance) / block.ramp).clamp(0, 1)  # (h, n, n)
    allowed = mask[:, None, None, :].expand(-1, H, n, -1)
    if block.causal:
        allowed = allowed & (j <= i)
    if attn_mask is not None:
        allowed = allowed & attn_mask[:, None]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    weights = normalised(soft * torch.exp(scores - scores.detach().amax(-1, keepdim=True)) * allowed)
    return _out(block, weights @ v), weights


@pytest.mark.parametrize("causal", [False, True])
def test_adaptive_span_equals_the_soft_masked_formula(causal, device):
    block = randomize_(create("adaptive_span", D, num_heads=H, max_span=4, ramp=2, causal=causal))
    block.span_fraction.data = torch.tensor([0.3, 0.8])  # spans 1.2 and 3.2 tokens: ramps inside the sequence
    x, mask = _inputs(n=9)
    check(block, span_reference, x, mask, device=device)
    attn_mask = torch.rand(B, 9, 9, generator=torch.Generator().manual_seed(1)) > 0.3
    check(block, span_reference, x, mask, device=device, attn_mask=attn_mask)
    weights = block(x.double(), mask, need_weights=True).weights
    i, j = torch.arange(9)[:, None], torch.arange(9)[None, :]
    assert not weights[0, 0][(i - j).abs() >= 1.2 + 2].any(), "nothing beyond span + ramp"


def test_span_loss_is_the_mean_span_and_trains_the_spans():
    model = AttentionEncoder(D, depth=2, attention="adaptive_span")
    for layer, fraction in zip(model.layers, (0.25, 0.5)):
        layer.attention.span_fraction.data.fill_(fraction)
    loss = span_loss(model)
    torch.testing.assert_close(loss, torch.tensor(64 * 0.25 + 64 * 0.5))
    loss.backward()
    assert all(layer.attention.span_fraction.grad.eq(64 / 8).all() for layer in model.layers)
    assert span_loss(nn.Linear(2, 2)).item() == 0


# --- Synthesizer -----------------------------------------------------------------------------


def synthesizer_reference(block, x, mask, need_weights=False):
    n = x.shape[1]
    if block.variant == "dense":
        hidden = torch.relu(x @ block.hidden.weight.T + block.hidden.bias)
        logits = (hidden @ block.logits.weight.T + block.logits.bias).reshape(B, n, H, -1)[..., :n]
        logits = logits.permute(0, 2, 1, 3)  # B_i: token i's row of logits, per head
    elif block.rank is None:
        logits = block.random[:, :n, :n].expand(B, -1, -1, -1)
    else:
        logits = torch.einsum("hir,hjr->hij", block.factors[0, :, :n], block.factors[1, :, :n]).expand(B, -1, -1, -1)
    allowed = mask[:, None, None, :].expand(-1, H, n, -1)
    if block.causal:
        allowed = allowed & torch.ones(n, n, dtype=torch.bool).tril()
    weights = softmax_over(logits, allowed)
    values = (x @ block.value.weight.T + block.value.bias).reshape(B, n, H, -1).transpose(1, 2)
    out = (weights @ values).transpose(1, 2).flatten(2) @ block.out.weight.T + block.out.bias
    return out, weights


@pytest.mark.parametrize(
    "variant, rank, causal", [("dense", None, False), ("random", None, True), ("random", 2, False)]
)
def test_synthesizer_matches_the_formula(variant, rank, causal, device):
    block = randomize_(create(f"synthesizer_{variant}", D, num_heads=H, max_len=9, rank=rank, causal=causal))
    x, mask = _inputs()
    check(block, synthesizer_reference, x, mask, device=device)
    with pytest.raises(ValueError, match="longer than max_len=9"):
        block(torch.randn(1, 10, D))


# --- Transformer-XL --------------------------------------------------------------------------


def sinusoid(distance: float, dim: int) -> torch.Tensor:
    f = [10000 ** (-2 * i / dim) for i in range(dim // 2)]
    return torch.tensor([math.sin(distance * a) for a in f] + [math.cos(distance * a) for a in f], dtype=torch.float64)


def xl_reference(block, x, mask, attn_mask=None, memory=None, need_weights=False):
    """Token by token: query t of segment s = t // L attends keys j of segments s - 1 and s
    (and ``memory`` before segment 0); keys of segment s - 1 come from states with no
    gradient; A_tj = (q_t + u).k_j + (q_t + v).W_R R_{t - j}."""
    b, n, _ = x.shape
    seg, d = block.segment, D // H
    u, v_bias = block.content_bias, block.position_bias
    w_r = block.position_proj.weight
    states = x if memory is None else torch.cat([memory, x], 1)  # memory at positions -L .. -1
    offset = 0 if memory is None else seg
    valid = mask if memory is None else torch.cat([torch.ones(b, seg, dtype=torch.bool), mask], 1)
    q = _heads(x, block.q_proj)
    outputs = torch.zeros(b, H, n, d, dtype=x.dtype)
    weights = torch.zeros(b, H, n, n, dtype=x.dtype)
    for t in range(n):
        s = t // seg
        keys = [j for j in range(max(-offset, (s - 1) * seg), min(n, (s + 1) * seg)) if (not block.causal or j <= t)]
        for e in range(b):
            kept = [j for j in keys if valid[e, j + offset] and (attn_mask is None or j < 0 or attn_mask[e, t, j])]
            if not kept:
                continue
            rows = torch.stack(
                [states[e, j + offset] if j >= s * seg else states[e, j + offset].detach() for j in kept]
            )
            k = _heads(rows[None], block.k_proj)[0]  # (h, K, d)
            val = _heads(rows[None], block.v_proj)[0]
            rel = torch.stack([(w_r @ sinusoid(t - j, D)).reshape(H, d) for j in kept], 1)  # (h, K, d)
            qt = q[e, :, t]  # (h, d)
            score = ((qt + u)[:, None] * k).sum(-1) + ((qt + v_bias)[:, None] * rel).sum(-1)
            a = torch.softmax(score / math.sqrt(d), -1)
            outputs[e, :, t] = (a[..., None] * val).sum(1)
            for idx, j in enumerate(kept):
                if j >= 0:
                    weights[e, :, t, j] = a[:, idx]
    return _out(block, outputs), weights


@pytest.mark.parametrize("causal", [False, True])
def test_transformer_xl_matches_the_token_by_token_formula(causal, device):
    block = randomize_(create("transformer_xl", D, num_heads=H, segment=3, causal=causal), scale=0.4)
    x, mask = _inputs(n=8)
    check(block, xl_reference, x, mask, device=device)
    attn_mask = torch.rand(B, 8, 8, generator=torch.Generator().manual_seed(2)) > 0.3
    assert_matches_reference(block, weights_too(xl_reference)[0], x, mask, attn_mask=attn_mask, device=device)
    memory = torch.randn(B, 3, D)
    assert_matches_reference(block, weights_too(xl_reference)[0], x, mask, memory=memory, device=device)


def test_transformer_xl_in_pieces_with_memory_equals_the_whole():
    block = randomize_(TransformerXLAttention(D, num_heads=H, segment=4)).eval()
    x = torch.randn(2, 12, D)
    whole = block(x)
    for s in range(1, 3):  # segment s alone, the previous segment's states as memory
        piece = block(x[:, 4 * s : 4 * s + 4], memory=x[:, 4 * s - 4 : 4 * s])
        torch.testing.assert_close(piece, whole[:, 4 * s : 4 * s + 4])


def test_transformer_xl_context_grows_one_segment_per_layer():
    """In an encoder, token 0 reaches a segment further with every layer (the recurrence)."""
    torch.manual_seed(0)
    encoder = AttentionEncoder(
        D, depth=2, attention=lambda dim: TransformerXLAttention(dim, num_heads=H, segment=3)
    ).eval()
    x = torch.randn(1, 12, D)
    changed = x.clone()
    changed[:, 0] += torch.randn(D)
    moved = (encoder(changed) - encoder(x)).abs().amax(-1)[0] > 1e-6
    assert moved[:9].all() and not moved[9:].any(), moved  # segments 0, 1, 2 of length 3; not segment 3


def test_transformer_xl_stops_the_gradient_at_the_memory():
    block = randomize_(TransformerXLAttention(D, num_heads=H, segment=3))
    x = torch.randn(1, 6, D, requires_grad=True)
    out = block(x)
    grad = torch.autograd.grad(out[:, 3:].sum(), x)[0]  # the second segment's outputs
    assert not grad[:, :3].any() and grad[:, 3:].abs().sum() > 0


def test_every_new_sequence_block_runs_in_the_encoder_by_name():
    x, mask = _inputs(n=9)
    for name in (
        "linformer",
        "performer",
        "sparse_strided",
        "sparse_fixed",
        "adaptive_span",
        "synthesizer_dense",
        "synthesizer_random",
        "transformer_xl",
    ):
        encoder = AttentionEncoder(D, depth=1, attention=name)
        out = encoder(x, mask)
        out.sum().backward()
        assert out.shape == x.shape and torch.isfinite(out).all(), name
        assert isinstance(encoder.layers[0].attention(x, mask, need_weights=True), AttentionOutput), name
