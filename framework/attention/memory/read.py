"""Memory attention: a query reads a memory of slots in several hops.

End-to-end memory networks (Sukhbaatar et al., NeurIPS 2015) and key-value memory
networks (Miller et al., EMNLP 2016) address the memory with one set of vectors (the
keys, MemN2N's input memories m_i) and read another (the values, MemN2N's output
memories c_i); the controller state u is refined after every hop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional, get_args

import torch
from torch import Tensor, nn

from ..base import AttentionBlock, AttentionOutput
from ..cross.distribution import Softmax
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import PositiveInt

#: How the state moves from one hop to the next.
Update = Literal["add", "linear", "per_hop"]
UPDATES: tuple[str, ...] = get_args(Update)


@register(
    "memory_read",
    kind="memory",
    category="memory / multi-hop memory read (key-value)",
    paper=(
        "Sukhbaatar et al., End-To-End Memory Networks, NeurIPS 2015; "
        "Miller et al., Key-Value Memory Networks, EMNLP 2016"
    ),
)
class MemoryRead(AttentionBlock):
    """Multi-hop memory read: the query addresses keys by inner product and reads values.

    With u^1 the query, for hops k = 1..K::

        p^k     = softmax_i(u^k . m_i^k)          over the valid slots i
        o^k     = sum_i p_i^k c_i^k
        u^{k+1} = u^k + o^k                       update="add"     (MemN2N, adjacent tying)
                  H u^k + o^k                     update="linear"  (MemN2N, layer-wise tying)
                  R_k (u^k + o^k)                 update="per_hop" (KV-MemNN)

    and the output is u^{K+1}. Embedding the story and the question (MemN2N's A, B, C,
    position and temporal encodings, KV-MemNN's feature maps) is the model's job.

    Args:
        dim: width D of the query, keys and values.
        hops: number of reads K.
        update: ``"add"``, ``"linear"`` (one learned D x D matrix H) or ``"per_hop"``
            (a learned D x D matrix R_k per hop).
        linear_start: drop the softmax, p^k = the masked raw scores (MemN2N §4.2, "linear
            start"). A plain attribute: a training callback may switch it off later.

    Shapes:
        query (B, D). keys (B, N, D), shared by all hops, or (B, K, N, D), one memory per
        hop (MemN2N's A^k, KV-MemNN's key features); values likewise (C^k, value features).
        mask (B, N) boolean, True = a real slot; masked slots get weight 0.
        Output (B, D). With ``need_weights=True``: ``AttentionOutput(output, weights
        (B, K, N))``.

    Captured weights: the (B, N) weights p^k of every hop, one record per hop.

    Papers: Sukhbaatar, Szlam, Weston & Fergus, "End-To-End Memory Networks", NeurIPS 2015;
    Miller, Fisch, Dodge, Karimi, Bordes & Weston, "Key-Value Memory Networks for Directly
    Reading Documents", EMNLP 2016.
    """

    def __init__(
        self, dim: PositiveInt, hops: PositiveInt = 1, update: Update = "add", linear_start: bool = False
    ) -> None:
        super().__init__()
        if update not in UPDATES:
            raise ValueError(f"memory_read: update must be one of {UPDATES}, got {update!r}")
        if hops < 1:
            raise ValueError(f"memory_read: hops must be at least 1, got {hops}")
        self.dim, self.hops, self.update, self.linear_start = dim, hops, update, linear_start
        self.softmax = Softmax()
        if update == "linear":
            self.H = nn.Linear(dim, dim, bias=False)
        elif update == "per_hop":
            self.R = nn.ModuleList(nn.Linear(dim, dim, bias=False) for _ in range(hops))

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        values: Tensor,
        mask: Optional[Tensor] = None,
        *,
        need_weights: bool = False,
    ) -> Tensor | AttentionOutput:
        self.expect("query", query, "B D", D=self.dim)
        batch = query.shape[0]
        self._expect_memory("keys", keys, B=batch, D=self.dim)
        n = keys.shape[-2]
        self._expect_memory("values", values, B=batch, N=n, D=self.dim)
        if mask is not None:
            self.expect("mask", mask, "B N", B=batch, N=n)
            mask = mask.bool()

        want = self.wants_weights(need_weights)
        weights = []
        u = query
        for k in range(self.hops):
            m = keys[:, k] if keys.dim() == 4 else keys
            c = values[:, k] if values.dim() == 4 else values
            scores = torch.einsum("bnd,bd->bn", m, u)
            if self.linear_start:
                p = scores if mask is None else scores.masked_fill(~mask, 0.0)
            else:
                p, _ = self.softmax(scores, mask)
            p = self.ablate(p, mask, normalised=not self.linear_start)
            if want:
                self.record(p, keys=(p.shape[-1],))
                weights.append(p)
            o = torch.einsum("bn,bnd->bd", p, c)
            if self.update == "add":
                u = u + o
            elif self.update == "linear":
                u = self.H(u) + o
            else:
                u = self.R[k](u + o)
        return self.finish(u, torch.stack(weights, 1) if need_weights else None, need_weights, recorded=True)

    def _expect_memory(self, name: str, x: Tensor, **sizes: int) -> None:
        """Keys and values are (B, N, D), shared by the hops, or (B, K, N, D), one per hop."""
        self.expect(name, x, "B K N D" if x.dim() >= 4 else "B N D", K=self.hops, **sizes)
