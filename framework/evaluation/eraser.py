"""ERASER's faithfulness of soft scores: comprehensiveness, sufficiency and their AOPC.

DeYoung, Jain, Rajani, Lehman, Xiong, Socher & Wallace, "ERASER: A Benchmark to Evaluate
Rationalized NLP Models", ACL 2020, §4.2, for a decision's predicted class y and its
probability p(y | x) (the class a task explains, :meth:`~framework.evaluation.protocol.EvaluationHooks.explained_class`:
the predicted one unless the task says otherwise):

* **comprehensiveness** = p(y | x) - p(y | x \\ r): how much the probability falls when the
  rationale r (the top-scored items) is erased; high for a faithful ranking;
* **sufficiency** = p(y | x) - p(y | r): how much it falls when only r is kept; low (or
  negative) for a faithful ranking;
* their **AOPC** (area over the perturbation curve, Samek et al. 2017): the mean over the bins
  B = {1, 5, 10, 20, 50} % of items of the two at r = the top ceil(b n) items (ERASER's
  ``aopc_thresholds``; the mean over bins and examples, as its ``_instances_aopc`` takes it).

The items are any task's (:meth:`~framework.evaluation.protocol.EvaluationHooks.item_attention`:
tokens, pixels, a node's neighbours, a sequence's items, memory slots), scored by their
attention and erased as the erasure test erases them (removed from the input where the task
can, else their vectors set to zero). At least one item stays (r has at most n - 1 of the n
valid items) and examples with fewer than two items are left out. Each figure has beside it
the same figure for as many random items, the level of a ranking that knows nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional

import torch
from torch import Tensor, nn

from .faithfulness import Collected, Erasure, erasure
from .protocol import EvaluationHooks
from .table import Row

#: ERASER's bins: the shares of the items in the rationale.
FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.5)


def ranks(scores: Tensor, valid: Tensor) -> Tensor:
    """(B, N) long: each valid item's place when the row's valid items are sorted by descending
    score (0 = the highest; ties in item order); invalid items get N."""
    order = scores.float().masked_fill(~valid.bool(), -torch.inf).argsort(dim=-1, descending=True, stable=True)
    placed = order.argsort(-1)
    return placed.masked_fill(~valid.bool(), scores.shape[-1])


def rationale_size(valid: Tensor, fraction: float) -> Tensor:
    """(B,) the items of a rationale of ``fraction`` of each row's n valid items: ceil(fraction n),
    at least 1 and at most n - 1 (0 for a row of fewer than two items)."""
    n = valid.bool().sum(-1)
    k = torch.ceil(n.double() * fraction - 1e-9).long().clamp(min=1)
    return torch.minimum(k, (n - 1).clamp(min=0))


def top_fraction(scores: Tensor, valid: Tensor, fraction: float) -> Tensor:
    """(B, N) bool: the rationale of each row, its :func:`rationale_size` top-scored valid items."""
    return valid.bool() & (ranks(scores, valid) < rationale_size(valid, fraction).unsqueeze(-1))


def random_like(chosen: Tensor, valid: Tensor, generator: Optional[torch.Generator] = None) -> Tensor:
    """(B, N) bool: as many valid items of each row as ``chosen`` has, drawn at random."""
    noise = torch.rand(valid.shape, generator=generator).to(valid.device)
    return valid.bool() & (ranks(noise, valid) < chosen.sum(-1, keepdim=True))


def probability_drop(p: Tensor, q: Tensor, target: Tensor) -> Tensor:
    """(B,) p(y) - q(y) of each row's class ``target`` (B,) long, from probabilities p and q (B, K):
    comprehensiveness with q the decision without the rationale, sufficiency with q the
    decision from the rationale alone."""
    return (p.gather(-1, target.unsqueeze(-1)) - q.gather(-1, target.unsqueeze(-1))).squeeze(-1)


def eraser_rows(
    model: nn.Module,
    task: EvaluationHooks,
    batches: Iterable[Any],
    fractions: Sequence[float] = FRACTIONS,
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> list[Row]:
    """Comprehensiveness and sufficiency of the item attention at every fraction of
    ``fractions``, and their AOPC, each beside random items', over ``batches`` (on the model's
    device, as :meth:`~framework.evaluation.protocol.EvaluationHooks.evaluation_batch` gives them)."""
    generator = torch.Generator().manual_seed(seed)
    got = Collected()
    blocks: tuple[str, ...] = ()
    how = ""
    for batch in batches:
        with torch.no_grad():
            items = task.item_attention(model, batch)
        if items is None:
            return [Row("eraser", "-", "-", "-", None, None, "n/a: the model weighs no input items")]
        blocks = items.blocks or blocks
        weights, valid = items.weights.float(), items.valid.bool()
        erased = erasure(model, task, batch, valid)
        if erased.probabilities is None:
            return [
                Row(
                    "eraser",
                    "-",
                    "-",
                    "-",
                    None,
                    None,
                    "n/a: the task can neither remove items nor reach their vectors",
                )
            ]
        how = erased.how
        with torch.no_grad():
            p = task.decision(model, batch).float().softmax(-1)
        explained, enough = task.explained_class(p), valid.sum(-1) >= 2
        asked: dict[bytes, Tensor] = {}  # erasures of this batch: with few items, several fractions pick the same

        def without(chosen: Tensor, *, asked: dict[bytes, Tensor] = asked, erased: Erasure = erased) -> Tensor:
            key = chosen.cpu().numpy().tobytes()
            if key not in asked:
                asked[key] = erased.probabilities(chosen)
            return asked[key]

        for fraction in fractions:
            top = top_fraction(weights, valid, fraction)
            for name, chosen in (("attention", top), ("random", random_like(top, valid, generator))):
                got.add(f"comprehensiveness/{name}/{fraction}", probability_drop(p, without(chosen), explained)[enough])
                got.add(
                    f"sufficiency/{name}/{fraction}", probability_drop(p, without(valid & ~chosen), explained)[enough]
                )
    if not got.values:
        return []
    label = ", ".join(blocks) or "-"
    examples = got.count(f"comprehensiveness/attention/{fractions[0]}")
    rows = []
    for measure in ("comprehensiveness", "sufficiency"):
        for fraction in fractions:
            rows.append(
                Row(
                    "eraser",
                    label,
                    f"top {fraction:.0%} of items, {how}, {examples} examples",
                    measure,
                    got.mean(f"{measure}/attention/{fraction}"),
                    got.mean(f"{measure}/random/{fraction}"),
                    "random items",
                )
            )
        bins = ", ".join(f"{fraction:.0%}" for fraction in fractions)
        rows.append(
            Row(
                "eraser",
                label,
                f"AOPC over {bins}, {examples} examples",
                f"AOPC {measure}",
                _mean([got.mean(f"{measure}/attention/{f}") for f in fractions]),
                _mean([got.mean(f"{measure}/random/{f}") for f in fractions]),
                "random items",
            )
        )
    return rows


def _mean(values: list[Optional[float]]) -> Optional[float]:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None
