"""Intrinsic measures: the model's attention against gold attention, where the data knows it
(:meth:`~framework.evaluation.protocol.EvaluationHooks.gold_views`).

* **Attention correctness** (Liu, Mao, Sha & Yuille, AAAI 2017): the weight mass a query puts
  on its gold keys, averaged over the queries that have gold, beside what uniform attention
  over the valid keys would put there (the chance level).
* **Alignment error rate** (Och & Ney, 2003) for alignments (views with possible links): the
  hard alignment links each query to its arg-max key; AER = 1 - (|A n S| + |A n P|) / (|A| + |S|).
* **Rank correlation**: Kendall's tau-b between a query's weights and its gold (or a graded
  reference such as label agreement with a graph node's neighbours), over the valid keys.

Figures are reported per view (hop, layer, head) and per group of examples (the bAbI task) when
the examples come from several groups.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, Optional

import torch
from torch import Tensor, nn

from .. import pictures
from .measures import AlignmentCounts, alignment_counts, hard_alignment, kendall_tau
from .protocol import EvaluationHooks, GoldView
from .table import Row

#: Queries per view and group whose rank correlation is computed at most (a seeded sample).
TAU_QUERIES = 2000


class _Sums:
    def __init__(self) -> None:
        self.mass: list[Tensor] = []
        self.uniform: list[Tensor] = []
        self.counts: Optional[AlignmentCounts] = None
        self.tau: list[Tensor] = []
        self.significant: list[Tensor] = []

    @staticmethod
    def _mean(values: list[Tensor]) -> Optional[float]:
        if not values:
            return None
        joined = torch.cat(values)
        joined = joined[~joined.isnan()]
        return float(joined.mean()) if len(joined) else None


def _add(sums: _Sums, view: GoldView, rows: Tensor, generator: torch.Generator) -> None:
    """Add the counted queries of the examples ``rows`` (B,) bool of a view to ``sums``."""
    weights, gold = view.weights[rows].float(), view.gold[rows]
    keys = view.keys.expand_as(view.weights)[rows].bool()
    queries = view.queries.expand(view.weights.shape[:-1])[rows].bool()
    graded = gold.float() * keys
    sums.mass.append((weights * graded).sum(-1)[queries].double().cpu())
    sums.uniform.append((graded.sum(-1) / keys.sum(-1).clamp(min=1))[queries].double().cpu())
    if view.possible is not None:
        possible = view.possible.expand_as(view.weights)[rows]
        counts = alignment_counts(hard_alignment(weights, keys), gold.bool(), possible, queries)
        sums.counts = counts if sums.counts is None else sums.counts + counts
    flat_w, flat_g, flat_k = weights[queries], graded[queries], keys[queries]
    if len(flat_w) > TAU_QUERIES:
        pick = torch.randperm(len(flat_w), generator=generator)[:TAU_QUERIES].to(flat_w.device)
        flat_w, flat_g, flat_k = flat_w[pick], flat_g[pick], flat_k[pick]
    if len(flat_w):
        tau = kendall_tau(flat_w, flat_g, flat_k)
        sums.tau.append(tau.tau)
        sums.significant.append(((tau.tau > 0) & (tau.p < 0.05)).double().where(~tau.tau.isnan(), math.nan))


def intrinsic_rows(
    model: nn.Module, task: EvaluationHooks, batches: Iterable[Any], seed: int = 0, say: Callable[[str], None] = print
) -> tuple[list[Row], dict[str, Any]]:
    """The rows of the intrinsic measures over ``batches`` (on the model's device), and a picture
    per view of the first batch's first example (its weights beside its gold)."""
    generator = torch.Generator().manual_seed(seed)
    sums: dict[tuple[str, str], _Sums] = {}
    drawn: dict[str, Any] = {}
    for batch in batches:
        with torch.no_grad():
            views = task.gold_views(model, batch)
        for view in views:
            everyone = torch.ones(len(view.weights), dtype=torch.bool, device=view.weights.device)
            groups = [("all", everyone)]
            if view.group is not None:
                groups += [(f"{view.group_name} {int(g)}", view.group == g) for g in view.group.unique().tolist()]
            for label, rows in groups:
                _add(sums.setdefault((view.name, label), _Sums()), view, rows, generator)
            if view.name not in drawn and len(drawn) < 16:
                picture = gold_picture(view)
                if picture is not None:
                    drawn[view.name] = picture
    rows = []
    grouped = {name: sum(1 for n, label in sums if n == name and label != "all") for name, _ in sums}
    for (name, label), s in sums.items():
        if label != "all" and grouped[name] < 2:  # one group only: its figures are those of "all"
            continue
        rows.append(
            Row(
                "intrinsic",
                name,
                label,
                "attention correctness",
                _Sums._mean(s.mass),
                _Sums._mean(s.uniform),
                "uniform",
            )
        )
        if s.counts is not None:
            rows.append(Row("intrinsic", name, label, "alignment error rate", s.counts.aer))
        if s.tau:
            rows.append(
                Row(
                    "intrinsic",
                    name,
                    label,
                    "kendall tau vs gold",
                    _Sums._mean(s.tau),
                    _Sums._mean(s.significant),
                    "share tau > 0, p < .05",
                )
            )
    return rows, drawn


def gold_picture(view: GoldView) -> Optional[Any]:
    """The first example's weights beside its gold (queries with gold x keys; keys the query may
    not attend hatched), as a figure of :mod:`framework.pictures`."""
    queries = view.queries.expand(view.weights.shape[:-1])[0].bool().cpu()
    if not queries.any():
        return None
    keys = view.keys.expand_as(view.weights)[0].bool().cpu()[queries]
    weights = view.weights[0].float().cpu()[queries]
    gold = view.gold[0].float().cpu().expand_as(view.weights[0])[queries]
    return pictures.heatmaps(
        [("attention", weights, "attention weight"), ("gold", gold, "gold weight")],
        rows="query (with gold)",
        columns="key",
        valid=keys,
        caption_text=f"{view.name}: the first test example's attention and its gold",
    )
