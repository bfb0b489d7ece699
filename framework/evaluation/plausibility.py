"""Plausibility: do the attention and the attributions point at the gold evidence?

ERASER's agreement with human rationales (DeYoung et al., ACL 2020, §4.1), with the data's
gold evidence as the rationale (bAbI's supporting facts, the queried pair of an associative
recall, the dates' alignments, the digit scenes' drawn digit):

* **token F1**: the hard rationale of a soft score is its top |G| items (G the gold items of
  the example, |G| its rationale length); precision, recall and their F1 against G;
* **IOU F1**: ERASER's partial match: a predicted rationale matches when its intersection over
  union with G is at least 0.5; with one rationale per example on either side, the F1 of the
  matches is the share of examples that match;
* **AUPRC**: the area under the precision-recall curve of the soft scores against G,
  ``sklearn.metrics.average_precision_score`` per example (examples whose valid items are all
  gold or none are left out, as ERASER's ``_score_aggregator`` leaves them).

Scored: the item attention and each Captum attribution of the faithfulness test against
:meth:`~framework.evaluation.protocol.EvaluationHooks.gold_attention`, where the task has it;
else each view of :meth:`~framework.evaluation.protocol.EvaluationHooks.gold_views` with boolean
gold, one example per query. Beside every figure, the same figure of random scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from .eraser import ranks
from .faithfulness import METHODS, Collected, attributions
from .protocol import EvaluationHooks
from .table import Row

#: Examples (or queries) per batch and view whose AUPRC is computed at most (a seeded sample).
AUPRC_EXAMPLES = 2000
#: ERASER's threshold of a partial match.
IOU_MATCH = 0.5


def hard_rationale(scores: Tensor, gold: Tensor, valid: Tensor) -> Tensor:
    """(B, N) bool: each row's |G| top-scored valid items, G its gold valid items."""
    gold = gold.bool() & valid.bool()
    return valid.bool() & (ranks(scores, valid) < gold.sum(-1, keepdim=True))


def token_f1(chosen: Tensor, gold: Tensor, valid: Tensor) -> Tensor:
    """(B,) the F1 of the ``chosen`` items against the gold ones (both among the valid items):
    2 P R / (P + R), 0 when none is right; NaN for a row without gold."""
    chosen, gold = chosen.bool() & valid.bool(), gold.bool() & valid.bool()
    hits = (chosen & gold).sum(-1).double()
    precision = hits / chosen.sum(-1).clamp(min=1)
    recall = hits / gold.sum(-1).clamp(min=1)
    f1 = torch.where(hits > 0, 2 * precision * recall / (precision + recall).clamp(min=1e-12), torch.zeros_like(hits))
    return f1.masked_fill(~gold.any(-1), math.nan)


def iou(chosen: Tensor, gold: Tensor, valid: Tensor) -> Tensor:
    """(B,) |C n G| / |C u G| of the chosen and gold valid items; NaN for a row without gold."""
    chosen, gold = chosen.bool() & valid.bool(), gold.bool() & valid.bool()
    union = (chosen | gold).sum(-1).double()
    return ((chosen & gold).sum(-1).double() / union.clamp(min=1)).masked_fill(~gold.any(-1), math.nan)


def auprc(scores: Tensor, gold: Tensor, valid: Tensor) -> Tensor:
    """(B,) ``sklearn.metrics.average_precision_score`` of each row's scores against its gold,
    over its valid items; NaN where they are all gold or none is."""
    from sklearn.metrics import average_precision_score

    scores, gold, valid = scores.detach().double().cpu(), gold.bool().cpu(), valid.bool().cpu()
    found = []
    for s, g, keep in zip(scores, gold, valid):
        g = g[keep]
        found.append(math.nan if g.all() or not g.any() else float(average_precision_score(g.numpy(), s[keep].numpy())))
    return torch.tensor(found, dtype=torch.float64)


def _score(got: Collected, name: str, scores: Tensor, gold: Tensor, valid: Tensor, sample: Tensor) -> None:
    overlap = iou(hard_rationale(scores, gold, valid), gold, valid)
    got.add(f"{name}/token F1", token_f1(hard_rationale(scores, gold, valid), gold, valid))
    got.add(f"{name}/IOU F1", (overlap >= IOU_MATCH).double().masked_fill(overlap.isnan(), math.nan))
    got.add(f"{name}/AUPRC", auprc(scores[sample], gold[sample], valid[sample]))


def _sample(rows: int, generator: torch.Generator, device: torch.device) -> Tensor:
    if rows <= AUPRC_EXAMPLES:
        return torch.arange(rows, device=device)
    return torch.randperm(rows, generator=generator)[:AUPRC_EXAMPLES].to(device)


def plausibility_rows(
    model: nn.Module,
    task: EvaluationHooks,
    batches: Iterable[Any],
    methods: Sequence[str] = METHODS,
    steps: int = 16,
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> list[Row]:
    """Token F1, IOU F1 and AUPRC of the attention (and of each attribution in ``methods``, on
    item-level gold) against the gold evidence, beside random scores', over ``batches``."""
    generator = torch.Generator().manual_seed(seed)
    got = Collected()
    labels: dict[str, tuple[str, str]] = {}  # name -> (block, setting)
    for batch in batches:
        gold = task.gold_attention(batch)
        with torch.no_grad():
            items = task.item_attention(model, batch) if gold is not None else None
        if items is not None:
            valid, gold = items.valid.bool(), gold.bool()
            explanations = {"attention": items.weights.float()}
            forward = task.item_forward(model, batch) if methods else None
            if forward is not None:
                with torch.no_grad():
                    explained = task.explained_class(task.decision(model, batch))
                explanations.update(attributions(forward, explained, methods, steps))
            explanations["random scores"] = torch.rand(valid.shape, generator=generator).to(valid.device)
            sample = _sample(len(valid), generator, valid.device)
            block = ", ".join(items.blocks) or "-"
            for name, scores in explanations.items():
                labels.setdefault(name, (block, name))
                _score(got, name, scores, gold, valid, sample)
            continue
        with torch.no_grad():
            views = task.gold_views(model, batch)
        for view in views:
            if view.gold.dtype != torch.bool:
                continue  # a graded reference (label agreement), not evidence
            queries = view.queries.expand(view.weights.shape[:-1]).bool()
            weights = view.weights.float()[queries]
            gold_view = view.gold.expand_as(view.weights)[queries]
            keys = view.keys.expand_as(view.weights).bool()[queries]
            sample = _sample(len(weights), generator, weights.device)
            noise = torch.rand(weights.shape, generator=generator).to(weights.device)
            for name, scores in ((view.name, weights), (f"{view.name}/random scores", noise)):
                labels.setdefault(name, (view.name, "attention" if name == view.name else "random scores"))
                _score(got, name, scores, gold_view, keys, sample)
    if not got.values:
        return [Row("plausibility", "-", "-", "-", None, None, "n/a: no gold evidence in this data")]
    rows = []
    for name, (block, setting) in labels.items():
        if setting == "random scores":
            continue
        random_name = "random scores" if name in ("attention", *METHODS) else f"{name}/random scores"
        for measure in ("token F1", "IOU F1", "AUPRC"):
            rows.append(
                Row(
                    "plausibility",
                    block,
                    f"{setting}, {got.count(f'{name}/{measure}')} examples",
                    measure,
                    got.mean(f"{name}/{measure}"),
                    got.mean(f"{random_name}/{measure}"),
                    "random scores",
                )
            )
    return rows
