"""Attention-over-attention (Cui et al., ACL 2017): document-level attentions, one per query
word, averaged with the weights of a query-level attention."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from torch import Tensor

from ..base import AttentionOutput
from ..registry import register
from .co_attention import _CoAttention
from .distribution import Softmax

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt


@register(
    "attention_over_attention",
    kind="cross",
    category="query-related / type: specialized queries (attention-over-attention)",
    paper=(
        "Cui, Chen, Wei, Wang, Liu & Hu, Attention-over-Attention Neural Networks for Reading Comprehension, ACL 2017"
    ),
    form="co-attention",
)
class AttentionOverAttention(_CoAttention):
    """Attention-over-attention: query-to-document attentions weighted by an averaged document-to-query attention.

    With the document D = X1 (N words) and the query Q = X2 (M words)::

        M_mat  = D Q^T                                   pair-wise matching       (B, N, M)
        alpha  = softmax over the document of M_mat      one column per query word (B, M, N)
        beta   = softmax over the query of M_mat         one row per document word (B, N, M)
        beta_bar = (1/n) sum_i beta_i                    query-level attention     (B, M)
        s      = alpha^T beta_bar                        attended attention        (B, N)
        c_1 = sum_i s_i d_i,   c_2 = sum_t beta_bar_t q_t

    ``s`` is the paper's final document attention (its pointer-sum read-out adds s over the
    places of each candidate word); ``c_1`` and ``c_2`` are the document and query read under
    these weights. Padded document words take no part in alpha or in the average of beta,
    padded query words none in beta. The block has no parameters: the matching is a dot
    product of contextual embeddings (the paper's bidirectional GRU states).

    Args:
        dim1: features D of the document words.
        dim2: features of the query words (default and only allowed value: ``dim1``).

    Shapes:
        x1 (B, N, D) document, x2 (B, M, D) query; ``mask1`` (B, N), ``mask2`` (B, M)
        boolean, True = a word. Output ``(c1 (B, D), c2 (B, D))``; with ``need_weights=True``
        an ``AttentionOutput`` whose weights are the captured ones.

    Captured weights: ``(alpha (B, M, N), beta_bar (B, M), s (B, N))`` per call.
    """

    def __init__(self, dim1: PositiveInt, dim2: Optional[PositiveInt] = None) -> None:
        super().__init__()
        self.dim1, self.dim2 = dim1, dim2 or dim1
        if self.dim2 != self.dim1:
            raise ValueError(
                f"attention_over_attention: document and query features must match (a dot product), "
                f"got dim1={dim1} and dim2={dim2}"
            )
        self.distribution = Softmax()

    def forward(
        self,
        x1: Tensor,
        x2: Tensor,
        mask1: Optional[Tensor] = None,
        mask2: Optional[Tensor] = None,
        *,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor] | AttentionOutput:
        self._check(x1, x2, mask1, mask2)
        doc_valid = None if mask1 is None else mask1.bool().unsqueeze(1)  # (B, 1, N)
        query_valid = None if mask2 is None else mask2.bool().unsqueeze(1)  # (B, 1, M)
        matching = x2 @ x1.transpose(1, 2)  # (B, M, N): M_mat transposed, one row per query word
        alpha, _ = self.distribution(matching, doc_valid)  # over the document
        beta, _ = self.distribution(matching.transpose(1, 2), query_valid)  # (B, N, M), over the query
        alpha, beta = self.ablate(alpha, doc_valid), self.ablate(beta, query_valid)
        if mask1 is None:
            beta_bar = beta.mean(1)
        else:
            rows = mask1.to(beta.dtype).unsqueeze(-1)  # padded document words have no beta row
            beta_bar = (beta * rows).sum(1) / rows.sum(1).clamp(min=1)
        s = (beta_bar.unsqueeze(1) @ alpha).squeeze(1)  # sum_t beta_bar_t alpha_t
        c1, c2 = (s.unsqueeze(1) @ x1).squeeze(1), (beta_bar.unsqueeze(1) @ x2).squeeze(1)
        want = need_weights or self.wants_weights()
        return self.finish((c1, c2), (alpha, beta_bar, s) if want else None, need_weights)
