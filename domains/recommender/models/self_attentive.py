"""Self-attentive sequential recommenders: SASRec (causal) and BERT4Rec (bidirectional, Cloze).

Both embed the history (shared item embeddings, learned positions) and run the core's
:class:`~framework.layers.AttentionEncoder` over the registry's sequence block (``mhsa`` by
default; ``--model.attention=local`` or ``none`` swaps it).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor, nn

from framework.attention import SequenceBlock
from framework.layers import AttentionEncoder, PositionalEncoding
from framework.values import Fraction, NonNegativeInt, PositiveFloat, PositiveInt

from .base import SequentialRecommender


class SelfAttentiveRecommender(SequentialRecommender):
    """Item embeddings (scaled by sqrt(D)) plus learned positions, then an attention encoder::

        h = Encoder(sqrt(D) E[history] + P),   s(n, i) = h_n . E_i

    Args:
        num_items: I.
        dim: D.
        depth: encoder layers.
        attention: the sequence block of every layer.
        max_len: longest history (learned positions 0 .. max_len - 1).
        mlp_ratio: hidden width of the position-wise MLP, in multiples of D.
        dropout: on embeddings, attention outputs and MLPs.
        causal: build every block with ``causal=True``.
        extra_tokens: ids after I that the model uses itself.

    Shapes: see :mod:`.base`; the padding mask of the encoder is ``history > 0``.
    """

    def __init__(
        self,
        num_items: Optional[PositiveInt] = None,
        dim: PositiveInt = 64,
        depth: PositiveInt = 2,
        attention: SequenceBlock = "mhsa",
        max_len: PositiveInt = 50,
        mlp_ratio: PositiveFloat = 1.0,
        dropout: Fraction = 0.2,
        causal: bool = True,
        extra_tokens: NonNegativeInt = 0,
    ) -> None:
        super().__init__(num_items, dim, extra_tokens)
        self.positions = PositionalEncoding(dim, max_len, learned=True, dropout=dropout)
        self.causal = causal  # position n sees the history up to n only (the task's pictures hatch the rest)
        self.encoder = AttentionEncoder(dim, depth, attention, mlp_ratio, dropout, causal)

    def encode(self, history: Tensor, offset: int = 0) -> Tensor:
        x = self.positions(self.items(history) * math.sqrt(self.dim), offset=offset)
        return self.encoder(x, history > 0)


class SASRec(SelfAttentiveRecommender):
    """SASRec (Kang & McAuley, Self-Attentive Sequential Recommendation, ICDM 2018): causal
    self-attention over the history; the state at position n predicts item n + 1 by its dot
    product with the shared item embeddings. Arguments as in :class:`SelfAttentiveRecommender`
    (point-wise MLP of width D, as in the paper)."""

    def __init__(
        self,
        num_items: Optional[PositiveInt] = None,
        dim: PositiveInt = 64,
        depth: PositiveInt = 2,
        attention: SequenceBlock = "mhsa",
        max_len: PositiveInt = 50,
        mlp_ratio: PositiveFloat = 1.0,
        dropout: Fraction = 0.2,
    ) -> None:
        super().__init__(num_items, dim, depth, attention, max_len, mlp_ratio, dropout, causal=True)


class BERT4Rec(SelfAttentiveRecommender):
    """BERT4Rec (Sun et al., CIKM 2019): a bidirectional encoder trained to fill masked items
    (the Cloze task, :class:`~domains.recommender.task.MaskedItemRanking`).

    The item after the history is predicted by appending the ``[mask]`` token (id I + 1)
    and reading its position. The output layer is the paper's: a GELU projection with
    layer norm, then the shared item embeddings plus a bias per item::

        s(n, i) = LN(GELU(W h_n + b)) . E_i + b_i

    Arguments as in :class:`SelfAttentiveRecommender` (MLP width 4 D, as in BERT).
    """

    def __init__(
        self,
        num_items: Optional[PositiveInt] = None,
        dim: PositiveInt = 64,
        depth: PositiveInt = 2,
        attention: SequenceBlock = "mhsa",
        max_len: PositiveInt = 50,
        mlp_ratio: PositiveFloat = 4.0,
        dropout: Fraction = 0.1,
    ) -> None:
        super().__init__(num_items, dim, depth, attention, max_len, mlp_ratio, dropout, causal=False, extra_tokens=1)
        self.mask_token = num_items + 1
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim))
        self.item_bias = nn.Parameter(torch.zeros(num_items + 1))

    def encode(self, history: Tensor, offset: int = 0) -> Tensor:
        return self.head(super().encode(history, offset))

    def forward(
        self, history: Tensor, candidates: Optional[Tensor] = None, last: bool = False, where: Optional[Tensor] = None
    ) -> Tensor:
        if last:  # the oldest item makes room for the [mask] whose filling is the prediction
            mask = history.new_full((len(history), 1), self.mask_token)
            history = torch.cat([history[:, 1:], mask], 1)
        return super().forward(history, candidates, last, where)

    def score(self, states: Tensor, candidates: Optional[Tensor]) -> Tensor:
        bias = self.item_bias if candidates is None else self.item_bias[candidates]
        return super().score(states, candidates) + bias
