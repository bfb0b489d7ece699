"""The structured self-attentive sentence embedding (Lin et al., ICLR 2017)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional, Union

import torch
from torch import Tensor, nn

from framework.attention import build, info
from framework.attention.spec import NONE, BlockFactory, PoolingOrCrossName
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.layers import masked_mean
from framework.values import Fraction, PositiveInt

from ..data.tokenization import PAD
from .common import ClassifierOutput, query_key_weights, uniform_weights
from .recurrent import Cell, RecurrentEncoder

#: kinds of registry blocks this model can pool with
POOLING_KINDS = ("pooling", "cross")
#: The pooling blocks that summarise a sequence in r rows, each with the arguments that set r (and
#: the width d_a of the paper's ``pooling``) and what it gives back: (B, r, D) or, for r = 1, (B, D);
#: ``capsule`` gives (probabilities (B, r), reconstructions (B, r, D)), whose reconstructions are the rows.
ROW_POOLING: dict[str, Callable[[int, int], dict[str, int]]] = {
    "pooling": lambda rows, hidden: {"num_queries": rows, "hidden": hidden},
    "pma": lambda rows, hidden: {"num_seeds": rows},
    "capsule": lambda rows, hidden: {"num_capsules": rows},
}


def _kind(attention: Union[str, object]) -> str:
    """How the block is called: ``none``, ``pooling`` (x, mask) or ``cross`` (learned queries, x)."""
    if attention is None or attention == NONE:
        return NONE
    if not isinstance(attention, str) or "." in attention:
        return "pooling"  # a class path or factory: called like the pooling blocks
    entry = info(attention)
    if entry.kind not in POOLING_KINDS or (entry.kind == "pooling" and entry.name not in ROW_POOLING):
        raise ConfigError(
            f"model.attention: {attention!r} ({entry.kind}) cannot pool one sequence in rows; use a pooling "
            f"block ({', '.join(ROW_POOLING)}) or a cross block queried by learned vectors "
            "('multi_dimensional', 'additive' ...)"
        )
    return entry.kind


def _rows(result: Tensor | tuple[Tensor, Tensor]) -> Tensor:
    """A pooling block's summary as rows (B, r, D): capsules' reconstructions, a single row unsqueezed."""
    summary = result[1] if isinstance(result, tuple) else result
    return summary.unsqueeze(1) if summary.dim() == 2 else summary


def _row_weights(weights: Tensor) -> Tensor:
    """A pooling block's weights as rows (B, r, N): a multi-head block's (B, h, r, N) averaged over heads."""
    return weights.mean(1) if weights.dim() == 4 else weights


class SelfAttentiveClassifier(nn.Module):
    """BiLSTM states summarised by r attention rows, then an MLP (Lin et al., ICLR 2017).

    ::

        H = BiLSTM(E x)                                   (B, N, D)
        A = softmax(W_s2 tanh(W_s1 H^T))                  (B, r, N)   ``pooling`` with r queries
        M = A H                                           (B, r, D)
        logits = MLP(flatten(M))
        penalty = ||A A^T - I||_F^2                       (the task adds it to the loss)

    ``attention`` names the block: ``pooling`` (the paper's, ``num_queries`` = r rows), another
    pooling block of :data:`ROW_POOLING` (``pma``'s r seeds, ``capsule``'s r capsules), a cross
    block such as ``multi_dimensional`` (Shen et al., feature-wise weights) queried by r learned
    vectors, or ``none`` (mean of the states, the baseline).

    Args:
        vocab_size, num_classes: sizes of the vocabulary and of the output.
        embed_dim: E. dim: D (two LSTM directions of D / 2). cell: ``lstm`` or ``gru``.
        attention: the pooling block; num_queries: r; attention_hidden: d_a of ``pooling``.
        hidden: the MLP's hidden width. dropout: on embeddings and in the MLP.

    Shapes: tokens (B, N) long, mask (B, N) bool (True = token) -> logits (B, K); with
    ``need_weights=True`` a :class:`ClassifierOutput` (token weights = A averaged over rows).
    """

    def __init__(
        self,
        vocab_size: Optional[PositiveInt] = None,
        num_classes: Optional[PositiveInt] = None,
        embed_dim: PositiveInt = 100,
        dim: PositiveInt = 200,
        attention: Union[PoolingOrCrossName, BlockFactory] = "pooling",
        num_queries: PositiveInt = 4,
        attention_hidden: PositiveInt = 100,
        hidden: PositiveInt = 200,
        cell: Cell = "lstm",
        dropout: Fraction = 0.2,
    ) -> None:
        require_sizes("model", vocab_size=vocab_size, num_classes=num_classes)
        super().__init__()
        self.vocab_size, self.kind = vocab_size, _kind(attention)
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.encoder = RecurrentEncoder(embed_dim, dim, cell)
        self.queries: Optional[nn.Parameter] = None
        if self.kind == "cross":
            self.queries = nn.Parameter(torch.randn(num_queries, dim) / dim**0.5)
            self.attention = build(attention, dim, kind="cross", forms=("set block",))  # learned (B, r, D) queries
        elif self.kind == "pooling":
            name = info(attention).name if isinstance(attention, str) and "." not in attention else "pooling"
            self.attention = build(attention, dim, **ROW_POOLING[name](num_queries, attention_hidden))
        #: whether ``need_weights=True`` gives attention rows (B, r, N), what ``task.penalty`` acts on
        self.returns_attention_rows = self.kind != NONE
        rows = 1 if self.kind == NONE else num_queries
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Sequential(
            nn.Linear(rows * dim, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, num_classes)
        )

    def _pool(self, states: Tensor, mask: Tensor, want: bool) -> tuple[Tensor, Optional[Tensor]]:
        """(summary (B, r, D) or (B, D), attention rows (B, r, N) when wanted)."""
        if self.kind == NONE:
            return masked_mean(states, mask), None
        if self.kind == "cross":
            queries = self.queries.expand(states.shape[0], -1, -1)
            result = self.attention(queries, states, key_padding_mask=mask, need_weights=want)
            return (result.output, query_key_weights(result.weights)) if want else (result, None)
        result = self.attention(states, mask, need_weights=want)
        return (_rows(result.output), _row_weights(result.weights)) if want else (_rows(result), None)

    def forward(self, tokens: Tensor, mask: Tensor, need_weights: bool = False) -> Union[Tensor, ClassifierOutput]:
        states, _ = self.encoder(self.dropout(self.embed(tokens)), mask)
        summary, rows = self._pool(states, mask, need_weights)
        logits = self.head(summary.flatten(1))
        if not need_weights:
            return logits
        weights = uniform_weights(mask, logits.dtype) if rows is None else rows.mean(1)
        return ClassifierOutput(logits, weights, rows)
