"""Fidelity of graph attention as an explanation: GraphFramEx's fidelity+ and fidelity- and the
characterization score, by ``torch_geometric.explain``.

Amara, Ying, Zhang, Han, Shan, Brandes, Schemm & Zhang, "GraphFramEx: Towards Systematic
Evaluation of Explainability Methods for Graph Neural Networks", LoG 2022; PyG's
``torch_geometric.explain.metric``. The explanation of a scored node is an edge mask: the
attention coefficients of the model's graph attention layers (PyG's ``AttentionExplainer``:
the largest over layers and heads, 0 outside the node's computation graph), made hard as the
top ceil(f E) edges of each evaluated node's subgraph (E its edges with attention, f a share of
:data:`~framework.evaluation.eraser.FRACTIONS`). For the model's own decisions (PyG's
``explanation_type="model"``):

* fidelity+ = 1 - mean 1[decision without the explanation's edges = decision]: high when the
  explanation's edges are necessary;
* fidelity- = 1 - mean 1[decision from the explanation's edges alone = decision]: low when
  they suffice;
* characterization = 1 / (w+ / fid+ + w- / (1 - fid-)), w+ = w- = 1/2: their harmonic mean.

Edges are masked as PyG masks them (their messages multiplied by 0 or 1 in every layer). Beside
each figure, the same for as many random edges of each subgraph. The batches are the task's
evaluation batches: one subgraph per scored node (``target_mask``), joined (``batch``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional

import torch
from torch import Tensor, nn

from .eraser import FRACTIONS
from .faithfulness import Collected
from .table import Row


def top_edges(scores: Tensor, graph: Tensor, candidates: Tensor, fraction: float) -> Tensor:
    """(E,) bool: in each graph (``graph`` (E,) the graph of every edge), the ceil(fraction n)
    candidate edges of highest score (n the graph's candidates, at least 1; ties in edge order)."""
    scores = scores.float().masked_fill(~candidates, -torch.inf)
    by_score = scores.argsort(descending=True, stable=True)
    order = by_score[graph[by_score].argsort(stable=True)]  # grouped by graph, by score within
    counts = torch.bincount(graph[candidates], minlength=int(graph.max()) + 1 if len(graph) else 0)
    starts = torch.bincount(graph, minlength=len(counts)).cumsum(0) - torch.bincount(graph, minlength=len(counts))
    place = torch.empty_like(order)
    place[order] = torch.arange(len(order), device=order.device)
    rank = place - starts[graph]
    size = torch.ceil(counts.double() * fraction - 1e-9).long().clamp(min=1)
    return candidates & (rank < size[graph])


def explainer(model: nn.Module) -> Any:
    """PyG's explainer of ``model``'s node classifications by its attention coefficients."""
    from torch_geometric.explain import Explainer
    from torch_geometric.explain.algorithm import AttentionExplainer

    return Explainer(
        model=model,
        algorithm=AttentionExplainer(reduce="max"),
        explanation_type="model",
        edge_mask_type="object",
        model_config=dict(mode="multiclass_classification", task_level="node", return_type="raw"),
    )


def fidelities(explaining: Any, explanation: Any, mask: Tensor) -> tuple[float, float]:
    """PyG's ``fidelity`` (fid+, fid-) of ``explanation`` with its edge mask replaced by ``mask``."""
    from torch_geometric.explain.metric import fidelity

    explanation.edge_mask = mask.float()
    return fidelity(explaining, explanation)


def graph_fidelity_rows(
    model: nn.Module,
    task: Any,
    batches: Iterable[Any],
    fractions: Sequence[float] = FRACTIONS,
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> list[Row]:
    """Fidelity+, fidelity- and characterization of the attention's top edges at every share of
    ``fractions``, beside random edges', over ``batches`` (PyG ``Batch`` of subgraphs with
    ``x``, ``edge_index``, ``batch`` and ``target_mask``; the model called as ``model(x, edge_index)``)."""
    from torch_geometric.data import Data
    from torch_geometric.explain.metric import characterization_score

    generator = torch.Generator().manual_seed(seed)
    got = Collected()
    explaining: Optional[Any] = None
    for batch in batches:
        if not (isinstance(batch, Data) and "x" in batch and "edge_index" in batch and "target_mask" in batch):
            return [Row("graph fidelity", "-", "-", "-", None, None, "n/a: not node classification on one graph type")]
        explaining = explaining or explainer(model)
        index = batch.target_mask.nonzero().flatten()
        try:
            explanation = explaining(batch.x, batch.edge_index, index=index)
        except ValueError as error:  # no attention coefficients (GCN, no attention)
            return [Row("graph fidelity", "-", "-", "-", None, None, f"n/a: {error}")]
        graph = batch.batch[batch.edge_index[1]] if "batch" in batch else torch.zeros_like(batch.edge_index[1])
        candidates = explanation.edge_mask > 0
        noise = torch.rand(candidates.shape, generator=generator).to(candidates.device)
        for fraction in fractions:
            for name, scores in (("attention", explanation.edge_mask), ("random", noise)):
                plus, minus = fidelities(explaining, explanation, top_edges(scores, graph, candidates, fraction))
                got.add(f"{name}/{fraction}/fidelity+", torch.full((len(index),), plus))
                got.add(f"{name}/{fraction}/fidelity-", torch.full((len(index),), minus))
    if not got.values:
        return []
    rows = []
    for fraction in fractions:
        nodes = got.count(f"attention/{fraction}/fidelity+")
        figures = {}
        for name in ("attention", "random"):
            plus, minus = got.mean(f"{name}/{fraction}/fidelity+"), got.mean(f"{name}/{fraction}/fidelity-")
            charact = float(
                characterization_score(
                    torch.tensor(plus, dtype=torch.float64), torch.tensor(minus, dtype=torch.float64)
                )
            )
            figures[name] = {"fidelity+": plus, "fidelity-": minus, "characterization": charact}
        for measure in ("fidelity+", "fidelity-", "characterization"):
            rows.append(
                Row(
                    "graph fidelity",
                    "attention edges (max over layers, heads)",
                    f"top {fraction:.0%} of edges, {nodes} nodes",
                    measure,
                    figures["attention"][measure],
                    figures["random"][measure],
                    "random edges",
                )
            )
    return rows
