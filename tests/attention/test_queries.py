"""Query- and feature-related blocks against their equations written out per example.

Each reference keeps only the valid positions of an example (so padding cannot leak), and
computes with explicit concatenations and loops, sharing no code with the library:
attention-over-attention (Cui et al. 2017), interactive co-attention (IAN), multi-grained
co-attention (MGAN), attention-via-attention (Zhao & Zhang 2018), capsule-based attention
(Wang et al. 2018), dynamic meta-embeddings (Kiela et al. 2018) and the deep alignment score
(Pavlopoulos et al. 2017).
"""

from __future__ import annotations

import pytest
import torch

from framework.attention import Attention, ShapeError, capture, create
from framework.attention.cross.attention_over_attention import AttentionOverAttention
from framework.attention.cross.attention_via_attention import AttentionViaAttention
from framework.attention.cross.interactive_co_attention import InteractiveCoAttention, MultiGrainedCoAttention
from framework.attention.pooling.capsule import CapsuleAttention, capsule_losses
from framework.attention.pooling.meta_embedding import MetaEmbedding
from tests.attention.reference import assert_matches_reference, randomize_

B, D = 3, 8


def lengths(values: list[int], n: int) -> torch.Tensor:
    """(B, n) right-padded mask, True = a real position."""
    return torch.arange(n)[None, :] < torch.tensor(values)[:, None]


def attend(scores: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(softmax(scores) values, softmax(scores)); zeros when there is nothing to attend."""
    if scores.numel() == 0:
        return values.new_zeros(values.shape[-1]), scores
    weights = torch.softmax(scores, 0)
    return weights @ values, weights


def mean(x: torch.Tensor) -> torch.Tensor:
    return x.mean(0) if len(x) else x.new_zeros(x.shape[-1])


def activated_general(score, query, keys):
    """tanh(k_l^T W q + b) from an ActivatedGeneralScore's parameters, W (dk, dq)."""
    return torch.tanh(keys @ score.weight[0] @ query + score.bias.flatten())


def bilinear(score, query, keys):
    """q^T W k_l from a GeneralScore's parameters, W (dq, dk)."""
    return keys @ (query @ score.weight[0])


def additive(score, query, keys):
    """w^T tanh(W_q q + W_k k_l + b) from an AdditiveScore's parameters."""
    return (
        torch.tanh(query @ score.query_weight[0] + keys @ score.key_weight[0] + score.bias[0, 0]) @ score.out[0, :, 0]
    )


def _pair_inputs(d2: int = D):
    x1, x2 = torch.randn(B, 5, D).double(), torch.randn(B, 4, d2).double()
    return x1, x2, lengths([5, 3, 0], 5), lengths([4, 1, 2], 4)  # the third example has an empty first input


# --- attention-over-attention ----------------------------------------------------------------


def aoa_reference(block, x1, x2, mask1, mask2):
    c1s, c2s = [], []
    for e in range(x1.shape[0]):
        document, query = x1[e][mask1[e]], x2[e][mask2[e]]
        if not len(document) or not len(query):
            c1s.append(x1.new_zeros(x1.shape[-1]))
            c2s.append(x2.new_zeros(x2.shape[-1]))
            continue
        matching = document @ query.T  # (n, m)
        alpha = torch.softmax(matching, 0)  # column-wise: one document distribution per query word
        beta_bar = torch.softmax(matching, 1).mean(0)  # row-wise, averaged over the document words
        s = alpha @ beta_bar
        c1s.append(s @ document)
        c2s.append(beta_bar @ query)
    return torch.stack(c1s), torch.stack(c2s)


def test_attention_over_attention_matches_reference(device):
    block = AttentionOverAttention(D)
    x1, x2, mask1, mask2 = _pair_inputs()
    for i in range(2):
        assert_matches_reference(
            block,
            lambda *a, i=i: aoa_reference(*a)[i],
            x1,
            x2,
            mask1,
            mask2,
            output=lambda out, i=i: out[i],
            device=device,
        )
    full = torch.ones(B, 5, dtype=torch.bool), torch.ones(B, 4, dtype=torch.bool)
    assert_matches_reference(
        block, lambda b, x1, x2: aoa_reference(b, x1, x2, *full)[0], x1, x2, output=lambda out: out[0], device=device
    )  # no masks


def test_attention_over_attention_weights_are_distributions():
    block = create("attention_over_attention", D)
    x1, x2, mask1, mask2 = _pair_inputs()
    alpha, beta_bar, s = block(x1, x2, mask1, mask2, need_weights=True).weights
    assert alpha.shape == (B, 4, 5) and beta_bar.shape == (B, 4) and s.shape == (B, 5)
    torch.testing.assert_close(s.sum(-1), torch.tensor([1.0, 1.0, 0.0], dtype=s.dtype))
    assert not s[1, 3:].any() and not beta_bar[1, 1:].any()


# --- interactive and multi-grained co-attention ----------------------------------------------


def interactive_reference(block, x1, x2, mask1, mask2, score=activated_general):
    c1s, c2s = [], []
    for e in range(x1.shape[0]):
        k1, k2 = x1[e][mask1[e]], x2[e][mask2[e]]
        c1s.append(attend(score(block.attend1.score, mean(k2), k1), k1)[0])
        c2s.append(attend(score(block.attend2.score, mean(k1), k2), k2)[0])
    return torch.stack(c1s), torch.stack(c2s)


@pytest.mark.parametrize("score", ["activated_general", "general"])
def test_interactive_co_attention_matches_reference(score, device):
    block = randomize_(InteractiveCoAttention(D, 6, score=score))
    x1, x2, mask1, mask2 = _pair_inputs(6)
    formula = activated_general if score == "activated_general" else bilinear
    for i in range(2):
        assert_matches_reference(
            block,
            lambda *a, i=i: interactive_reference(*a, score=formula)[i],
            x1,
            x2,
            mask1,
            mask2,
            output=lambda out, i=i: out[i],
            device=device,
        )


def multi_grained_reference(block, x1, x2, mask1, mask2):
    c1s, c2s = [], []
    w, bias = block.align.weight[0], block.align.bias[0]
    for e in range(x1.shape[0]):
        k1, k2 = x1[e][mask1[e]], x2[e][mask2[e]]
        m_ca = attend(bilinear(block.coarse.attend1.score, mean(k2), k1), k1)[0]
        m_cc = attend(bilinear(block.coarse.attend2.score, mean(k1), k2), k2)[0]
        if len(k1):
            u = torch.stack([torch.stack([w @ torch.cat([a, b, a * b]) + bias for b in k2]) for a in k1])  # (n1, n2)
            m_fa = attend(u.max(1).values, k1)[0]
            m_fc = torch.stack([attend(row, k2)[0] for row in u]).mean(0)
        else:
            m_fa = m_fc = x1.new_zeros(D)
        c1s.append(torch.cat([m_ca, m_fa]))
        c2s.append(torch.cat([m_cc, m_fc]))
    return torch.stack(c1s), torch.stack(c2s)


def test_multi_grained_co_attention_matches_reference(device):
    block = randomize_(MultiGrainedCoAttention(D))
    x1, x2, mask1, mask2 = _pair_inputs()
    for i in range(2):
        assert_matches_reference(
            block,
            lambda *a, i=i: multi_grained_reference(*a)[i],
            x1,
            x2,
            mask1,
            mask2,
            output=lambda out, i=i: out[i],
            device=device,
        )


def test_co_attention_blocks_capture_their_documented_weights():
    x1, x2, mask1, mask2 = _pair_inputs()
    x1, x2 = x1.float(), x2.float()
    interactive, grained = create("interactive_co_attention", D), create("multi_grained_co_attention", D)
    with capture(interactive, "interactive_co_attention") as maps:
        interactive(x1, x2, mask1, mask2)
    assert [w.shape for w in maps["interactive_co_attention"][0].weights] == [(B, 5), (B, 4)]
    with capture(grained) as maps:
        grained(x1, x2, mask1, mask2)
    coarse1, coarse2, fine1, rows = maps["multi_grained_co_attention"][0].weights
    assert [w.shape for w in (coarse1, coarse2, fine1, rows)] == [(B, 5), (B, 4), (B, 5), (B, 5, 4)]
    assert "coarse" in maps and not rows[1, 3:].any() and not rows[0, :, 4:].any()
    torch.testing.assert_close(rows[0].sum(-1), torch.ones(5))


# --- attention-via-attention ---------------------------------------------------------------


def via_reference(block, query, words, chars, word_mask, char_mask):
    rows = []
    for e in range(query.shape[0]):
        w, c = words[e][word_mask[e]], chars[e][char_mask[e]]
        outputs = []
        for q in query[e]:
            c_w = attend(additive(block.words.score, q, w), w)[0]
            c_c = attend(additive(block.characters.score, torch.cat([q, c_w]), c), c)[0]
            outputs.append(torch.cat([c_w, c_c]))
        rows.append(torch.stack(outputs))
    return torch.stack(rows)


def test_attention_via_attention_matches_reference(device):
    block = randomize_(create("attention_via_attention", D, 6, 4, score_kwargs={"hidden": 5}))
    query, words, chars = torch.randn(B, 2, D).double(), torch.randn(B, 5, 6).double(), torch.randn(B, 9, 4).double()
    word_mask, char_mask = lengths([5, 2, 0], 5), lengths([9, 4, 0], 9)
    assert_matches_reference(block, via_reference, query, words, chars, word_mask, char_mask, device=device)
    single = block(query[:, 0], words, chars, word_mask, char_mask, need_weights=True)
    torch.testing.assert_close(single.output, block(query, words, chars, word_mask, char_mask)[:, 0])
    assert [w.shape for w in single.weights] == [(B, 5), (B, 9)] and not single.weights[1][1, 4:].any()


# --- capsules and meta-embeddings -------------------------------------------------------------


def capsule_reference(block, x, mask):
    ps, rs = [], []
    for e in range(x.shape[0]):
        h = x[e][mask[e]]
        capsules = torch.stack([attend(h @ q, h)[0] for q in block.queries])  # v_c
        p = torch.sigmoid((capsules * block.probability).sum(-1) + block.probability_bias)
        ps.append(p)
        rs.append(p[:, None] * capsules)
    return torch.stack(ps), torch.stack(rs)


def test_capsule_attention_matches_reference(device):
    block = randomize_(CapsuleAttention(D, num_capsules=3))
    x, mask = torch.randn(B, 5, D).double(), lengths([5, 2, 1], 5)
    for i in range(2):
        assert_matches_reference(
            block, lambda *a, i=i: capsule_reference(*a)[i], x, mask, output=lambda out, i=i: out[i], device=device
        )
    with capture(block, "capsule") as maps:
        block(x, mask)
    weights = maps["capsule"][0].weights
    assert weights.shape == (B, 3, 5) and not weights[1, :, 2:].any()


def test_capsule_losses_are_the_hinge_terms():
    p = torch.tensor([[0.9, 0.2, 0.1], [0.4, 0.7, 0.6]], requires_grad=True)
    r = torch.randn(2, 3, 4)
    summary = torch.randn(2, 4)
    target = torch.tensor([0, 2])
    probability, reconstruction = capsule_losses(p, r, summary, target)
    want_j = [max(0.0, 1 - 0.9 + 0.2 + 0.1), max(0.0, 1 - 0.6 + 0.4 + 0.7)]
    agree = torch.einsum("bcd,bd->bc", r, summary)
    want_u = [
        max(0.0, float(1 - agree[b, y] + sum(agree[b, c] for c in range(3) if c != y))) for b, y in enumerate([0, 2])
    ]
    torch.testing.assert_close(probability, torch.tensor(sum(want_j) / 2))
    torch.testing.assert_close(reconstruction, torch.tensor(sum(want_u) / 2))
    probability.backward()
    torch.testing.assert_close(p.grad, torch.tensor([[-0.5, 0.5, 0.5], [0.5, 0.5, -0.5]]))


def meta_reference(block, *embeddings):
    out = torch.empty(*embeddings[0].shape[:-1], block.dim, dtype=embeddings[0].dtype)
    for b in range(out.shape[0]):
        for n in range(out.shape[1]):
            projected = [x[b, n] @ p.weight.T + p.bias for x, p in zip(embeddings, block.projections)]
            weights = torch.softmax(torch.stack([block.query @ x for x in projected]), 0)
            out[b, n] = sum(a * x for a, x in zip(weights, projected))
    return out


def test_meta_embedding_matches_reference(device):
    block = randomize_(create("meta_embedding", D, embedding_dims=[4, 6, 8]))
    embeddings = [torch.randn(B, 5, d).double() for d in (4, 6, 8)]
    assert_matches_reference(block, meta_reference, *embeddings, device=device)
    weights = block(*embeddings, need_weights=True).weights
    assert weights.shape == (B, 5, 3)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, 5, dtype=weights.dtype))


# --- the deep alignment score ------------------------------------------------------------------


def deep_reference(block, query, key, value, *, key_padding_mask):
    """Per head: E1 = tanh(q Wq + k Wk + b1), E_l = tanh(E_{l-1} W_l + b_l), e = E_L w + b; then the
    distribution over the valid keys (softmax, or sigmoid times the mask)."""
    s, h = block.score, block.num_heads
    outputs = []
    for head in range(h):
        q, k, v = (x.chunk(h, -1)[head] for x in (query, key, value))
        hidden = torch.tanh(
            (q @ s.query_weight[head])[:, :, None] + (k @ s.key_weight[head])[:, None] + s.bias[head, 0]
        )
        for weight, bias in zip(s.hidden_weights, s.hidden_biases):
            hidden = torch.tanh(hidden @ weight[head] + bias[head, 0, 0])
        e = (hidden @ s.out[head])[..., 0] + s.out_bias[head, 0, 0, 0]  # (B, M, N)
        if type(block.distribution).__name__ == "Sigmoid":
            a = torch.sigmoid(e) * key_padding_mask[:, None]
        else:
            a = torch.softmax(e.masked_fill(~key_padding_mask[:, None], float("-inf")), -1)
        outputs.append(a @ v)
    return torch.cat(outputs, -1)


@pytest.mark.parametrize(
    "layers, heads, distribution", [(1, 1, "softmax"), (3, 1, "softmax"), (2, 2, "softmax"), (2, 1, "sigmoid")]
)
def test_deep_alignment_score_matches_reference(layers, heads, distribution, device):
    block = randomize_(
        Attention(
            6,
            4,
            4,
            score="deep",
            project=False,
            num_heads=heads,
            distribution=distribution,
            score_kwargs={"hidden": 5, "layers": layers},
        )
    )
    query, key, value = torch.randn(2, 3, 6).double(), torch.randn(2, 5, 4).double(), torch.randn(2, 5, 4).double()
    mask = lengths([5, 3], 5)
    assert_matches_reference(block, deep_reference, query, key, value, key_padding_mask=mask, device=device)


def test_deep_alignment_preset_is_the_deep_score_without_projections():
    block = create("deep_alignment", 6, 4)
    assert type(block.score).__name__ == "DeepScore" and block.score.layers == 2 and block.out_dim == 4
    weights = create("deep_alignment", 6, 4, multi_dimensional=True)(
        torch.randn(2, 3, 6), torch.randn(2, 5, 4), need_weights=True
    ).weights
    assert weights.shape == (2, 1, 3, 5, 4)  # feature-wise, like the additive score
    with pytest.raises(ValueError, match="layers must be at least 1"):
        create("deep_alignment", 6, score_kwargs={"layers": 0})


# --- shape errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "block, args, message",
    [
        (
            AttentionOverAttention(D),
            (torch.randn(2, 5, D), torch.randn(2, 3, 4)),
            r"attention_over_attention: x2 must have shape \(2, N2, 8\)",
        ),
        (
            InteractiveCoAttention(D),
            (torch.randn(2, 5, D), torch.randn(2, 3, D), torch.ones(2, 4, dtype=torch.bool)),
            r"interactive_co_attention: mask1 must have shape \(2, 5\), got \(2, 4\)",
        ),
        (
            MultiGrainedCoAttention(D),
            (torch.randn(2, 5, 6), torch.randn(2, 3, D)),
            r"multi_grained_co_attention: x1 must have shape \(B, N1, 8\)",
        ),
        (
            AttentionViaAttention(D, 6, 4),
            (torch.randn(2, D), torch.randn(2, 5, 6), torch.randn(2, 7, 5)),
            r"attention_via_attention: chars must have shape \(2, N, 4\), got \(2, 7, 5\)",
        ),
        (CapsuleAttention(D), (torch.randn(2, 5, 4),), r"capsule: x must have shape \(B, N, 8\), got \(2, 5, 4\)"),
        (
            MetaEmbedding(D, [4, 6]),
            (torch.randn(2, 5, 4), torch.randn(2, 3, 6)),
            r"meta_embedding: embedding 1 must have shape \(2, 5, 6\)",
        ),
    ],
)
def test_errors_name_the_block_the_tensor_and_the_shapes(block, args, message):
    with pytest.raises(ShapeError, match=message):
        block(*args)


def test_blocks_that_multiply_their_inputs_refuse_different_widths():
    with pytest.raises(ValueError, match="features must match"):
        MultiGrainedCoAttention(D, 6)
    with pytest.raises(ValueError, match="features must match"):
        AttentionOverAttention(D, 6)
