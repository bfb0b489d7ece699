"""DIN (Zhou et al., Deep Interest Network for Click-Through Rate Prediction, KDD 2018):
the history is pooled by attention *to the candidate item*, one user vector per candidate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import torch
from torch import Tensor, nn

from framework.attention import CrossBlock, build
from framework.data.sizes import require_sizes
from framework.values import PositiveInt

from .base import check_history, leading_padding


class DIN(nn.Module):
    """Target attention over the history, then an MLP on the user vector and the candidate::

        u_c  = sum_j a(e_c, e_j) e_j                      (e_j: history items, e_c: the candidate)
        s(c) = MLP([u_c; e_c; u_c * e_c])                  (PReLU hidden layers)

    ``attention`` is a registry cross block called as ``block(queries, history,
    key_padding_mask=, attn_mask=)``. The default ``additive`` is DIN's activation unit as
    the survey's additive score: a one-hidden-layer MLP of candidate and history item,
    e_j = w^T tanh(W1 e_c + W2 e_j + b) (the paper's inputs e_c, e_j and e_c - e_j are all
    inside W1 e_c + W2 e_j; its product input e_c * e_j is not), weights softmax-normalised.
    ``none`` keeps u_c = e_c: a history-blind item model.

    At every position n (``last=False``) the candidates of n attend history items j <= n
    only, so one pass trains on every next item of a history, as SASRec does. With ``where``
    each chosen position is a row of its own (its history, masked after n), so training on
    the real positions of short histories costs those positions only.

    Args:
        num_items: I; item ids 1 .. I, 0 is padding.
        dim: D, the item embedding width.
        attention: the target-attention block (a cross block).
        hidden: widths of the MLP's hidden layers (the paper's 80, 40).
        chunk_size: candidates scored at once; bounds the memory of the (candidates x
            history x hidden) tensor of MLP scores when ranking every item.

    Shapes: as :mod:`.base`: history (B, N); candidates None, (B, N, C) or (B, C).
    """

    #: Position n's candidates see the history up to n only (the task's pictures hatch the rest).
    causal = True

    def __init__(
        self,
        num_items: Optional[PositiveInt] = None,
        dim: PositiveInt = 64,
        attention: CrossBlock = "additive",
        hidden: Sequence[PositiveInt] = (80, 40),
        chunk_size: PositiveInt = 256,
    ) -> None:
        require_sizes("model", num_items=num_items)
        super().__init__()
        self.num_items, self.chunk_size = num_items, chunk_size
        self.items = nn.Embedding(num_items + 1, dim, padding_idx=0)
        self.attention = build(attention, dim, kind="cross", calls_with=("attn_mask",))  # the causal rows
        widths = [3 * dim, *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(widths, widths[1:]):
            layers += [nn.Linear(a, b), nn.PReLU()]
        self.mlp = nn.Sequential(*layers, nn.Linear(widths[-1], 1))

    def forward(
        self, history: Tensor, candidates: Optional[Tensor] = None, last: bool = False, where: Optional[Tensor] = None
    ) -> Tensor:
        check_history(self, history, self.num_items + 1)
        if last or where is not None:  # the columns that are padding in every row attend nothing
            start = leading_padding(history, None if last else where)
            history, where = history[:, start:], None if where is None else where[:, start:]
        batch, n = history.shape
        keys, mask = self.items(history), history > 0
        if where is not None and not last:  # one row per chosen position: its candidates see j <= n
            row, position = where.nonzero(as_tuple=True)
            if candidates is None:
                candidates = torch.arange(self.num_items + 1, device=history.device).expand(len(row), -1)
            seen = mask[row] & (torch.arange(n, device=history.device) <= position.unsqueeze(1))
            return self._score_chunks(candidates, keys[row], seen, None)
        if candidates is None:
            every = torch.arange(self.num_items + 1, device=history.device)
            candidates = every.expand((batch, self.num_items + 1) if last else (batch, n, self.num_items + 1))
        if last:
            return self._score_chunks(candidates, keys, mask, None)
        per_position = candidates.shape[-1]
        causal = torch.ones(n, n, dtype=torch.bool, device=history.device).tril()  # candidate at n sees j <= n
        scores = self._score_chunks(candidates.flatten(1), keys, mask, causal.repeat_interleave(per_position, 0))
        return scores.view(batch, n, per_position)

    def _score_chunks(self, candidates: Tensor, keys: Tensor, mask: Tensor, attn_mask: Optional[Tensor]) -> Tensor:
        """Scores (B, M) of candidates (B, M); ``attn_mask`` (M, N) says which history items each may see."""
        chunks = []
        for start in range(0, candidates.shape[1], self.chunk_size):
            part = slice(start, start + self.chunk_size)
            queries = self.items(candidates[:, part])
            rows = None if attn_mask is None else attn_mask[part]
            interest = self.attention(queries, keys, key_padding_mask=mask, attn_mask=rows)
            chunks.append(self.mlp(torch.cat([interest, queries, interest * queries], -1)).squeeze(-1))
        return torch.cat(chunks, 1)
