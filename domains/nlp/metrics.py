"""Sequence metrics: next-token accuracy under teacher forcing, and exact match of decoded strings.

Perplexity and BLEU are torchmetrics' (``Perplexity``, and ``SacreBLEUScore``, which
reproduces sacreBLEU's corpus BLEU with its 13a tokenisation without needing sacrebleu).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor
from torchmetrics import Metric

from framework.values import AnyInt

from .data.tokenization import PAD


class TokenAccuracy(Metric):
    """Share of target tokens (``<pad>`` excluded) that are the arg-max of the logits.

    update(logits (B, M, V), target (B, M)).
    """

    higher_is_better = True
    full_state_update = False

    def __init__(self, ignore_index: AnyInt = PAD) -> None:
        super().__init__()
        self.ignore_index = ignore_index
        self.add_state("correct", torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", torch.tensor(0), dist_reduce_fx="sum")

    def update(self, logits: Tensor, target: Tensor) -> None:
        real = target != self.ignore_index
        self.correct += ((logits.argmax(-1) == target) & real).sum()
        self.total += real.sum()

    def compute(self) -> Tensor:
        return self.correct.float() / self.total.clamp(min=1)


class ExactMatch(Metric):
    """Share of hypotheses equal to one of their reference strings (after stripping outer spaces).

    update(hypotheses: list of str, references: a list of str per hypothesis, as BLEU takes them).
    """

    higher_is_better = True
    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("matches", torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", torch.tensor(0), dist_reduce_fx="sum")

    def update(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
        if len(hypotheses) != len(references):
            raise ValueError(f"exact match: {len(hypotheses)} hypotheses but {len(references)} lists of references")
        self.matches += sum(h.strip() in {r.strip() for r in rs} for h, rs in zip(hypotheses, references))
        self.total += len(references)

    def compute(self) -> Tensor:
        return self.matches.float() / self.total.clamp(min=1)
