"""Supervised attention: a loss that pulls a block's weights towards gold attention vectors.

The surveys' joint objective (Liu, Utiyama, Finch & Sumita, "Neural Machine Translation with
Supervised Attention", COLING 2016; the strong supervision of memory networks, Weston et al.
2015 and Sukhbaatar et al. 2015, §4): loss = task loss + lambda * CE(gold vector, weights),
where the gold vector spreads one unit of mass uniformly over the gold keys of a query
(the supporting facts of a bAbI question, the source characters aligned to an output
character). Tasks add it when ``task.attention_supervision`` is above 0 and log it as
``<stage>/attention_loss``.
"""

from __future__ import annotations

from typing import Optional

from torch import Tensor

from .measures import gold_distribution


def attention_supervision_loss(weights: Tensor, gold: Tensor, keys: Optional[Tensor] = None, eps: float = 1e-8) -> Tensor:
    """Cross-entropy -sum_k g_k log w_k between the gold vectors g (uniform over the gold keys,
    ``gold`` (..., Q, K) bool, broadcastable; within the valid ``keys``) and the weights w
    (..., Q, K), averaged over the queries that have gold keys (0 when none has)."""
    target = gold_distribution(gold.expand_as(weights), None if keys is None else keys.expand_as(weights))
    counted = target.sum(-1) > 0
    if not counted.any():
        return weights.sum() * 0
    cross_entropy = -(target * weights.clamp(min=eps).log()).sum(-1)
    return cross_entropy[counted].mean()
