"""The general attention model: one module that composes a score and a distribution.

Brauwers & Frasincar (2021), eqs. (1)-(4), with the extensions of their taxonomy::

    K = W_K F,  V = W_V F,  q = W_Q q_in              (projections, per head)
    e_l = score(q, k_l)                               (score.py)
    a   = distribution(e)                             (distribution.py)
    c   = sum_l a_l v_l          (multi-dimensional: c = sum_l a_l * v_l, a_l in R^dv)
    out = W_O [c_1; ...; c_h]                         (multi-head)
    q_in <- q_in + out, repeated ``hops`` times       (multi-hop)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..masks import causal_mask, combine
from ..probes import ProbeRows
from ..registry import register, unknown_name_message
from .distribution import DISTRIBUTIONS, DistributionName, Hard, Normalize, Softmax
from .score import SCORES, KernelScore, Score, ScoreName

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, PositiveInt


def _lookup(table: dict, name: str, what: str) -> Any:
    if name not in table:
        raise ValueError(unknown_name_message(name, sorted(table), what))
    return table[name]


@register(
    "attention",
    kind="cross",
    category="general attention model (score -> distribution -> weighted sum)",
    paper="Brauwers & Frasincar, A General Survey on Attention Mechanisms in Deep Learning, TKDE 2021",
)
class Attention(AttentionBlock):
    """General attention: ``e = score(q, K)``, ``a = distribution(e)``, ``c = sum_l a_l v_l``.

    Args:
        dim: query features Dq (the model width).
        key_dim: key features Dk (default ``dim``).
        value_dim: value features Dv (default ``key_dim``).
        score: a name from ``general.score.SCORES``: additive, dot, scaled_dot, general,
            biased_general, activated_general, concat, location, cosine, kernel, deep, coda (pairs).
        distribution: softmax, sparsemax, sigmoid, hard, normalize (kernel scores),
            entmax15, adaptive_entmax (a learned alpha per head) or quasi (with the coda score).
        num_heads: h parallel heads; each has its own projections and score parameters.
        head_dim: features per head (default ``dim // num_heads``).
        project: learn the query/key/value/output maps W_Q, W_K, W_V, W_O (Transformer
            style). Without them the raw features are scored and averaged (Bahdanau and
            Luong style) and the output has Dv features.
        out_dim: output features with ``project`` (default ``dim``).
        hops: attend this many times, adding the output to the query in between
            (multi-hop; needs output features == Dq).
        multi_dimensional: one weight per value feature (additive and concat scores).
        causal: query i attends keys j <= i only.
        dropout: dropout on the attention weights while training.
        score_kwargs: extra options of the score (``hidden``, ``activation``, ``max_len``,
            ``temperature``, ``layers``).

    Shapes:
        query (B, M, Dq), or (B, Dq) for a single query; key (B, N, Dk), default the
        query (self-attention); value (B, N, Dv), default the key.
        ``key_padding_mask`` (B, N) and ``attn_mask`` (M, N), (B, M, N) or (B, h, M, N)
        are boolean, True = may attend. Output (B, M, D_out), or (B, D_out).
        With ``need_weights=True``: ``AttentionOutput(output, weights (B, h, M, N),
        log_prob (B, h, M) for hard attention)``; with one query the M axis is dropped.

    When the score is a scaled dot product of its inputs (dot, scaled_dot, general,
    biased_general, cosine), the distribution is softmax and no weights are wanted, the
    fused ``torch.nn.functional.scaled_dot_product_attention`` computes the same numbers.
    A kernel score with the normalize distribution runs in time linear in N.

    Captured weights: the (B, h, M, N) weights of every hop. A capture with probes gets the
    rows of its probe queries computed from the projections, ``distribution(score(q_P, K))``
    with the mask's rows, whatever path computes the output (except for multi-dimensional and
    hard attention, whose rows are cut from the full weights).
    """

    def __init__(
        self,
        dim: PositiveInt,
        key_dim: Optional[PositiveInt] = None,
        value_dim: Optional[PositiveInt] = None,
        *,
        score: ScoreName = "scaled_dot",
        distribution: DistributionName = "softmax",
        num_heads: PositiveInt = 1,
        head_dim: Optional[PositiveInt] = None,
        project: bool = True,
        out_dim: Optional[PositiveInt] = None,
        bias: bool = True,
        hops: PositiveInt = 1,
        multi_dimensional: bool = False,
        causal: bool = False,
        dropout: Fraction = 0.0,
        score_kwargs: Optional[dict[str, Any]] = None,
    ) -> None:
        super().__init__()
        self.dim, self.key_dim = dim, key_dim or dim
        self.value_dim = value_dim or self.key_dim
        self.num_heads, self.hops, self.causal, self.dropout = num_heads, hops, causal, dropout
        self.multi_dimensional = multi_dimensional
        if project:
            if head_dim is None and dim % num_heads:
                raise ValueError(f"attention: dim={dim} is not divisible by num_heads={num_heads}")
            hd = head_dim or dim // num_heads
            q_head = k_head = v_head = hd
            self.q_proj = nn.Linear(dim, num_heads * hd, bias=bias)
            self.k_proj = nn.Linear(self.key_dim, num_heads * hd, bias=bias)
            self.v_proj = nn.Linear(self.value_dim, num_heads * hd, bias=bias)
            self.out_proj = nn.Linear(num_heads * hd, out_dim or dim, bias=bias)
            self.out_dim = out_dim or dim
        else:
            if out_dim not in (None, self.value_dim):
                raise ValueError("attention: out_dim needs project=True (without it the output has value_dim features)")
            for name, d in (("dim", dim), ("key_dim", self.key_dim), ("value_dim", self.value_dim)):
                if d % num_heads:
                    raise ValueError(f"attention: {name}={d} is not divisible by num_heads={num_heads}")
            q_head, k_head, v_head = dim // num_heads, self.key_dim // num_heads, self.value_dim // num_heads
            self.q_proj = self.k_proj = self.v_proj = self.out_proj = nn.Identity()
            self.out_dim = self.value_dim
        if hops > 1 and self.out_dim != dim:
            raise ValueError(f"attention: hops={hops} adds the output to the query, so it needs out_dim == dim={dim}")

        score_cls = _lookup(SCORES, score, "score function")
        options = dict(score_kwargs or {})
        if multi_dimensional:
            if not score_cls.feature_wise:
                feature_wise = sorted(n for n, c in SCORES.items() if c.feature_wise)
                raise ValueError(
                    f"attention: multi_dimensional needs a feature-wise score ({feature_wise}), got {score!r}"
                )
            options["value_dim"] = v_head
        self.score = score_cls(q_head, k_head, num_heads, **options)
        distribution_cls = _lookup(DISTRIBUTIONS, distribution, "distribution function")
        self.distribution = distribution_cls(num_heads) if distribution_cls.per_head else distribution_cls()
        # rows of probe queries from the projections: not for weights per value feature, nor for sampled ones,
        # nor over rows that are no keys (a capture keeps those whole)
        self.gives_probe_rows = not multi_dimensional and not isinstance(self.distribution, Hard) and self.key_positions
        if distribution_cls.pairs != score_cls.pairs:
            pairs = (
                sorted(n for n, c in DISTRIBUTIONS.items() if c.pairs),
                sorted(n for n, c in SCORES.items() if c.pairs),
            )
            raise ValueError(
                f"attention: distribution {distribution!r} and score {score!r} do not fit: the pair "
                f"distributions {pairs[0]} take the pair scores {pairs[1]}, and only those"
            )

    @property
    def backends(self) -> tuple[str, ...]:  # type: ignore[override]
        """``sdpa`` (the fused kernel) for a softmax over a dot-product score, ``linear`` for a kernel
        score with its normalisation (a causal one only over as many queries as keys, without
        ``attn_mask`` or dropout), then ``eager``; none for the other scores and distributions."""
        if self.multi_dimensional:
            return ()
        if isinstance(self.distribution, Softmax) and type(self.score).as_dot_product is not Score.as_dot_product:
            return ("sdpa", "eager")
        if isinstance(self.score, KernelScore) and isinstance(self.distribution, Normalize):
            return ("linear", "eager")
        return ()

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor] = None,
        value: Optional[Tensor] = None,
        *,
        key_padding_mask: Optional[Tensor] = None,
        attn_mask: Optional[Tensor] = None,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        single = query.dim() == 2
        if single:
            query = query.unsqueeze(1)
        key = query if key is None else key
        value = key if value is None else value
        self.expect("query", query, "B M Dq", Dq=self.dim)
        batch = query.shape[0]
        self.expect("key", key, "B N Dk", B=batch, Dk=self.key_dim)
        self.expect("value", value, "B N Dv", B=batch, N=key.shape[1], Dv=self.value_dim)
        if key_padding_mask is not None:
            self.expect("key_padding_mask", key_padding_mask, "B N", B=batch, N=key.shape[1])

        want = self.wants_weights(need_weights)
        k, v = self._split(self.k_proj(key)), self._split(self.v_proj(value))
        for hop in range(self.hops):
            q = self._split(self.q_proj(query))
            context, weights, log_prob = self._attend(q, k, v, key_padding_mask, attn_mask, want)
            out = self.out_proj(context.transpose(1, 2).flatten(2))  # (B, M, D_out)
            if hop + 1 < self.hops:
                query = query + out
        if single:
            out = out.squeeze(1)
            if need_weights:
                weights = weights[:, :, 0]
                log_prob = None if log_prob is None else log_prob[:, :, 0]
        return self.finish(out, weights, need_weights, recorded=True, log_prob=log_prob)  # _attend records each hop

    def _split(self, x: Tensor) -> Tensor:
        """(B, L, h*d) -> (B, h, L, d)."""
        return x.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)

    def _mask(
        self, key_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor], m: int, n: int, device: torch.device
    ) -> Optional[Tensor]:
        """Key padding, explicit and causal masks combined into one (B|1, h|1, M|1, N) boolean mask
        (:func:`~framework.attention.masks.combine`)."""
        return combine(
            self.block_name, key_padding_mask, attn_mask, m, n, causal_mask(m, n, device) if self.causal else None
        )

    def _attend(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        key_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor],
        want: bool,
    ) -> tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
        """One hop for all heads: q (B, h, M, dq), k (B, h, N, dk), v (B, h, N, dv) -> c (B, h, M, dv)."""
        m, n = q.shape[-2], k.shape[-2]
        dropout = self.dropout if self.training else 0.0
        fast = not want and not self.multi_dimensional
        if fast and isinstance(self.distribution, Softmax) and (dot := self.score.as_dot_product(q, k)) is not None:
            only_causal = self.causal and key_padding_mask is None and attn_mask is None
            mask = None if only_causal else self._mask(key_padding_mask, attn_mask, m, n, q.device)
            q_dot, k_dot, scale = dot
            context = F.scaled_dot_product_attention(
                q_dot, k_dot, v, attn_mask=mask, dropout_p=dropout, is_causal=only_causal, scale=scale
            )
            self._probe(q, k, key_padding_mask, attn_mask)
            return context, None, None
        linear_ok = attn_mask is None and dropout == 0.0 and (not self.causal or m == n)
        if fast and linear_ok and isinstance(self.score, KernelScore) and isinstance(self.distribution, Normalize):
            self._probe(q, k, key_padding_mask, attn_mask)
            return self._linear(q, k, v, key_padding_mask), None, None

        mask = self._mask(key_padding_mask, attn_mask, m, n, q.device)
        energies = self.score(q, k)  # (B, h, M, N) or (B, h, M, N, dv)
        normalised = self.distribution.normalised
        if self.multi_dimensional:
            mask = None if mask is None else mask.unsqueeze(-1)
            weights, log_prob = self.distribution(energies, mask, dim=-2)
            weights = self.ablate(weights, mask, dim=-2, normalised=normalised)
        else:
            weights, log_prob = self.distribution(energies, mask, dim=-1)
            weights = self.ablate(weights, mask, dim=-1, normalised=normalised)
        self.record(weights, queries=(m,), keys=(n,))
        self._probe(q, k, key_padding_mask, attn_mask, weights, energies)
        dropped = F.dropout(weights, dropout) if dropout else weights
        if self.multi_dimensional:
            context = (dropped * v.unsqueeze(2)).sum(-2)  # sum_l a_l * v_l
        else:
            context = dropped @ v
        return context, weights, log_prob

    def _row_mask(
        self, index: Tensor, key_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor], m: int, n: int
    ) -> Optional[Tensor]:
        """The rows ``index`` (P,) of :meth:`_mask`, (B|1, h|1, P|1, N), without building the (M, N) mask."""
        rows = None
        if attn_mask is not None:
            full = combine(self.block_name, None, attn_mask, m, n)  # (B|1, h|1, M|1, N)
            rows = full.index_select(-2, index) if full.shape[-2] == m else full
        causal = torch.arange(n, device=index.device) <= index[:, None] if self.causal else None
        return combine(self.block_name, key_padding_mask, rows, len(index), n, causal)

    def _probe(
        self,
        q: Tensor,
        k: Tensor,
        key_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor],
        weights: Optional[Tensor] = None,
        energies: Optional[Tensor] = None,
    ) -> None:
        """Hand the captures with probes the rows of their probe queries: cut from ``weights``
        and ``energies`` where this pass computed them, else ``distribution(score(q_P, K))``."""
        if not self.probing():
            return
        m, n = q.shape[-2], k.shape[-2]

        def rows(index: Tensor) -> ProbeRows:  # the query axis is axis 2 of q, energies and weights
            mask = self._row_mask(index, key_padding_mask, attn_mask, m, n)
            if weights is not None:
                rows, logits = weights.index_select(2, index), energies.index_select(2, index)
            else:
                logits = self.score(q.index_select(2, index), k)
                rows = self.distribution(logits, mask, dim=-1)[0]
            return ProbeRows(rows, mask, None if self.score.pairs else logits)  # pair scores: (..., 2) energies

        self.record_rows(rows, queries=(m,), keys=(n,), device=q.device)

    def _linear(self, q: Tensor, k: Tensor, v: Tensor, key_padding_mask: Optional[Tensor]) -> Tensor:
        """Kernel attention in O(N): phi(q) (phi(K)^T V) / (phi(q) . sum_j phi(k_j) + eps)."""
        fq, fk = KernelScore.feature_map(q), KernelScore.feature_map(k)
        if key_padding_mask is not None:
            fk = fk * key_padding_mask[:, None, :, None]
        if self.causal:  # running sums over keys j <= i
            kv = (fk.unsqueeze(-1) * v.unsqueeze(-2)).cumsum(2)  # (B, h, N, dk, dv)
            numerator = (fq.unsqueeze(-2) @ kv).squeeze(-2)
            denominator = (fq * fk.cumsum(2)).sum(-1, keepdim=True)
        else:
            # (V^T phi(K))^T rather than phi(K)^T V: the same numbers, and a backward whose
            # strides torch.compile predicts (the other order fails a view in aot_eager's backward).
            numerator = fq @ (v.transpose(-1, -2) @ fk).transpose(-1, -2)
            denominator = fq @ fk.sum(2).unsqueeze(-1)
        return numerator / (denominator + self.distribution.eps)


def _preset(name: str, category: str, paper: str, **kwargs: Any) -> None:
    register(name, kind="cross", category=category, paper=paper, **kwargs)(Attention)


# Catalogue entries that are one configuration of the general model, as the surveys list them.
_preset("additive", "general / scoring: additive", "Bahdanau, Cho & Bengio, ICLR 2015", score="additive", project=False)
_preset("dot", "general / scoring: multiplicative", "Luong, Pham & Manning, EMNLP 2015", score="dot", project=False)
_preset("scaled_dot", "general / scoring: scaled multiplicative", "Vaswani et al., NeurIPS 2017", score="scaled_dot")
_preset("general", "general / scoring: general", "Luong, Pham & Manning, EMNLP 2015", score="general", project=False)
_preset(
    "biased_general",
    "general / scoring: biased general",
    "Sordoni et al., arXiv:1606.02245, 2016",
    score="biased_general",
    project=False,
)
_preset(
    "activated_general",
    "general / scoring: activated general",
    "Ma et al., IJCAI 2017",
    score="activated_general",
    project=False,
)
_preset("concat", "general / scoring: concat", "Luong, Pham & Manning, EMNLP 2015", score="concat", project=False)
_preset(
    "location",
    "general / scoring: location-based",
    "Luong, Pham & Manning, EMNLP 2015",
    score="location",
    project=False,
)
_preset(
    "cosine",
    "general / scoring: similarity (cosine)",
    "Graves, Wayne & Danihelka, arXiv:1410.5401, 2014",
    score="cosine",
    project=False,
)
_preset(
    "kernel",
    "general / scoring: kernel feature map (linear time)",
    "Katharopoulos et al., ICML 2020",
    score="kernel",
    distribution="normalize",
)
_preset(
    "sparsemax", "general / alignment: sparse (sparsemax)", "Martins & Astudillo, ICML 2016", distribution="sparsemax"
)
_preset("sigmoid", "general / alignment: sigmoid", "Kim, Denton, Hoang & Rush, ICLR 2017", distribution="sigmoid")
_preset("hard", "general / alignment: hard (stochastic)", "Xu et al., ICML 2015", distribution="hard")
_preset(
    "entmax15",
    "general / alignment: sparse (1.5-entmax)",
    "Peters, Niculae & Martins, Sparse Sequence-to-Sequence Models, ACL 2019",
    distribution="entmax15",
)
_preset(
    "adaptive_entmax",
    "general / alignment: sparse (alpha-entmax, alpha learned per head)",
    "Correia, Niculae & Martins, Adaptively Sparse Transformers, EMNLP 2019",
    distribution="adaptive_entmax",
)
_preset(
    "quasi_attention",
    "general / alignment: quasi-attention (compositional de-attention)",
    "Tay, Luu, Zhang, Wang & Hui, Compositional De-Attention Networks, NeurIPS 2019",
    score="coda",
    distribution="quasi",
)
_preset(
    "multi_dimensional",
    "general / dimensionality: multi-dimensional",
    "Shen et al., AAAI 2018",
    score="additive",
    multi_dimensional=True,
)
_preset("multi_head", "query-related / multiplicity: multi-head", "Vaswani et al., NeurIPS 2017", num_heads=8)
_preset(
    "deep_alignment",
    "general / scoring: deep alignment (multi-layer MLP)",
    "Pavlopoulos, Malakasiotis & Androutsopoulos, Deeper Attention to Abusive User Content Moderation, EMNLP 2017",
    score="deep",
    project=False,
)
_preset(
    "multi_hop",
    "query-related / multiplicity: multi-hop",
    "Yang et al., CVPR 2016; Sukhbaatar et al., NeurIPS 2015",
    hops=2,
)
