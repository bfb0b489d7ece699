"""Is the attention an explanation? The faithfulness tests of the surveys' debate, on any task
whose model weighs input items (:meth:`~framework.evaluation.protocol.EvaluationHooks.item_attention`).

* **Permutation** (Jain & Wallace, "Attention is not Explanation", NAACL 2019, §4.2): the
  attention of the item blocks permuted among the items, ``permutations`` times; the median
  (over the draws) total variation and Jensen-Shannon distance of the output distribution,
  and how often the decision changes. Small changes under permutation say that the decision
  does not depend on which item gets which weight.
* **Erasure** (Serrano & Smith, "Is Attention Interpretable?", ACL 2019): the k items with
  the highest attention erased against k random other items; how often the decision flips
  and the Jensen-Shannon distance of the output. Attention that ranks items by importance
  flips more decisions with its top items than chance does. Items are removed from the
  input where the task can (:meth:`~framework.evaluation.protocol.EvaluationHooks.erase_items`: tokens cut out,
  sentences emptied, edges dropped), else their vectors at the item layer are set to zero.
* **Attribution** (Jain & Wallace §4.1; Wiegreffe & Pinter, "Attention is not not
  Explanation", EMNLP 2019, who ask for such comparisons rather than one verdict): Kendall's
  tau-b between the attention and the importance of each item for the explained class's
  probability (the predicted one unless the task says otherwise: ``explained_class``), by
  gradient x input, integrated gradients (Sundararajan et al., 2017; zero baseline) and
  leave-one-out (the item's vector set to zero), all from Captum on the items' vectors
  (:meth:`~framework.evaluation.protocol.EvaluationHooks.item_forward`); the magnitude of the first
  two, the signed drop of the third. The tau between integrated gradients and leave-one-out
  is given as the agreement two attribution methods reach among themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, NamedTuple, Optional, get_args

import torch
from torch import Tensor, nn

from ..attention import ablation
from .measures import jensen_shannon, kendall_tau, total_variation
from .protocol import EvaluationHooks, ItemAttention, ItemForward
from .table import Row

#: The attribution methods the attention is compared with.
Method = Literal["gradient_x_input", "integrated_gradients", "leave_one_out"]
METHODS: tuple[str, ...] = get_args(Method)


def top_k(weights: Tensor, valid: Tensor, k: int) -> Tensor:
    """(B, N) bool: the k valid items of highest weight in each row."""
    scores = weights.float().masked_fill(~valid, -math.inf)
    chosen = torch.zeros_like(valid)
    return chosen.scatter(-1, scores.topk(k, -1).indices, True) & valid


def random_k(valid: Tensor, k: int, generator: Optional[torch.Generator] = None) -> Tensor:
    """(B, N) bool: k valid items of each row drawn at random (rows with fewer get them all)."""
    noise = torch.rand(valid.shape, generator=generator).to(valid.device).masked_fill(~valid, -1.0)
    chosen = torch.zeros_like(valid)
    return chosen.scatter(-1, noise.topk(k, -1).indices, True) & valid


class Erasure(NamedTuple):
    """How a batch's decision changes when items go (:func:`erasure`): ``probabilities`` maps
    the erased items (B, N) bool to the decision's probabilities (B, K), or is None where the
    task can do neither; ``how`` says which way; ``forward`` is the task's item forward."""

    probabilities: Optional[Callable[[Tensor], Tensor]]
    how: str
    forward: Optional[ItemForward]


def erasure(model: nn.Module, task: EvaluationHooks, batch: Any, valid: Tensor, needs_vectors: bool = False) -> Erasure:
    """Items removed from the input where the task can
    (:meth:`~framework.evaluation.protocol.EvaluationHooks.erase_items`), else their vectors at
    the item layer set to zero (:meth:`~framework.evaluation.protocol.EvaluationHooks.item_forward`,
    also made when ``needs_vectors``)."""
    erased_input = task.erase_items(batch, torch.zeros_like(valid)) is not None
    forward = task.item_forward(model, batch) if needs_vectors or not erased_input else None

    def removed(erased: Tensor) -> Tensor:
        with torch.no_grad():
            return task.decision(model, task.erase_items(batch, erased)).float().softmax(-1)

    def zeroed(erased: Tensor) -> Tensor:
        kept = (~erased).unsqueeze(-1).to(forward.vectors.dtype)
        with torch.no_grad():
            return forward.forward(forward.vectors * kept).float().softmax(-1)

    if erased_input:
        return Erasure(removed, "removed from the input", forward)
    if forward is not None:
        return Erasure(zeroed, "vectors set to zero", forward)
    return Erasure(None, "", None)


def attributions(
    forward: ItemForward, target: Tensor, methods: Sequence[str] = METHODS, steps: int = 16
) -> dict[str, Tensor]:
    """The importance (B, N) of each item for the ``target`` class's probability by each of
    ``methods``, computed by Captum on the item vectors: |gradient x input|, |integrated
    gradients| (zero baseline, ``steps`` steps) and leave-one-out (probability drop when the
    item's vector is zero)."""
    from captum.attr import FeatureAblation, InputXGradient, IntegratedGradients

    def probabilities(vectors: Tensor) -> Tensor:
        return forward.forward(vectors).float().softmax(-1)

    vectors = forward.vectors.detach().float()
    size, items = vectors.shape[:2]
    found = {}
    with torch.enable_grad():
        if "gradient_x_input" in methods:
            found["gradient_x_input"] = (
                InputXGradient(probabilities).attribute(vectors.clone().requires_grad_(), target=target).sum(-1).abs()
            )
        if "integrated_gradients" in methods:
            found["integrated_gradients"] = (
                IntegratedGradients(probabilities)
                .attribute(
                    vectors.clone().requires_grad_(),
                    baselines=torch.zeros_like(vectors),
                    target=target,
                    n_steps=steps,
                    internal_batch_size=size,
                )
                .sum(-1)
                .abs()
            )
    if "leave_one_out" in methods:
        ids = torch.arange(items, device=vectors.device).view(1, items, 1).expand(1, items, vectors.shape[-1])
        with torch.no_grad():
            found["leave_one_out"] = FeatureAblation(probabilities).attribute(
                vectors, baselines=0.0, target=target, feature_mask=ids
            )[..., 0]
    return {name: value.detach() for name, value in found.items()}


class Collected:
    """Per-example figures of the batches seen so far."""

    def __init__(self) -> None:
        self.values: dict[str, list[Tensor]] = {}

    def add(self, name: str, value: Tensor) -> None:
        self.values.setdefault(name, []).append(value.detach().double().cpu().flatten())

    def mean(self, name: str) -> Optional[float]:
        if name not in self.values:
            return None
        values = torch.cat(self.values[name])
        values = values[~values.isnan()]
        return float(values.mean()) if len(values) else None

    def count(self, name: str) -> int:
        return sum(len(v) for v in self.values.get(name, []))


def faithfulness_rows(
    model: nn.Module,
    task: EvaluationHooks,
    batches: Iterable[Any],
    permutations: int = 10,
    ks: Sequence[int] = (1,),
    methods: Sequence[str] = METHODS,
    steps: int = 16,
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> list[Row]:
    """The rows of the permutation, erasure and attribution tests over ``batches`` (already as
    :meth:`~framework.evaluation.protocol.EvaluationHooks.evaluation_batch` gives them, on the model's device)."""
    generator = torch.Generator().manual_seed(seed)
    got = Collected()
    blocks: tuple[str, ...] = ()
    how = ""
    for batch in batches:
        with torch.no_grad():
            items = task.item_attention(model, batch)
        if items is None:
            return [Row("faithfulness", "-", "-", "-", None, None, "n/a: the model weighs no input items")]
        blocks = items.blocks or blocks
        how = _batch_figures(model, task, batch, items, got, permutations, ks, methods, steps, generator) or how
    if not got.values:
        return []
    label = ", ".join(blocks) or "-"
    examples = got.count("permutation/tvd")
    rows = [
        Row(
            "permutation",
            label,
            f"{permutations} permutations, {examples} examples",
            "median output TVD",
            got.mean("permutation/tvd"),
        ),
        Row(
            "permutation",
            label,
            f"{permutations} permutations, {examples} examples",
            "median output JSD",
            got.mean("permutation/jsd"),
        ),
        Row(
            "permutation",
            label,
            f"{permutations} permutations, {examples} examples",
            "decision changes",
            got.mean("permutation/flip"),
        ),
    ]
    for k in ks:
        counted = got.count(f"erasure/top{k}/flip")
        if not counted:
            continue
        setting = f"top-{k} attended, {how}, {counted} examples"
        rows += [
            Row(
                "erasure",
                label,
                setting,
                "decision flips",
                got.mean(f"erasure/top{k}/flip"),
                got.mean(f"erasure/random{k}/flip"),
                f"random {k}",
            ),
            Row(
                "erasure",
                label,
                setting,
                "output JSD",
                got.mean(f"erasure/top{k}/jsd"),
                got.mean(f"erasure/random{k}/jsd"),
                f"random {k}",
            ),
        ]
    for method in methods:
        if f"tau/{method}" in got.values:
            rows.append(
                Row(
                    "attribution",
                    label,
                    method,
                    "kendall tau vs attention",
                    got.mean(f"tau/{method}"),
                    got.mean(f"significant/{method}"),
                    "share tau > 0, p < .05",
                )
            )
    if "tau/reference" in got.values:
        rows.append(
            Row(
                "attribution",
                "integrated_gradients vs leave_one_out",
                "agreement of two attributions",
                "kendall tau",
                got.mean("tau/reference"),
                got.mean("significant/reference"),
                "share tau > 0, p < .05",
            )
        )
    return rows


def _batch_figures(
    model: nn.Module,
    task: EvaluationHooks,
    batch: Any,
    items: ItemAttention,
    got: Collected,
    permutations: int,
    ks: Sequence[int],
    methods: Sequence[str],
    steps: int,
    generator: torch.Generator,
) -> str:
    weights, valid = items.weights.float(), items.valid.bool()
    with torch.no_grad():
        p = task.decision(model, batch).float().softmax(-1)
        predicted = p.argmax(-1)
        tvd, jsd, flip = [], [], []
        for _ in range(permutations):
            with ablation(model, "permute", *items.blocks):
                q = task.decision(model, batch).float().softmax(-1)
            tvd.append(total_variation(p, q))
            jsd.append(jensen_shannon(p, q))
            flip.append((q.argmax(-1) != predicted).double())
        if permutations:
            got.add("permutation/tvd", torch.stack(tvd, 1).median(1).values)
            got.add("permutation/jsd", torch.stack(jsd, 1).median(1).values)
            got.add("permutation/flip", torch.stack(flip, 1).mean(1))
    erased_decision, how, forward = erasure(model, task, batch, valid, needs_vectors=bool(methods))
    counts = valid.sum(-1)
    for k in ks:
        enough = counts >= 2 * k
        if not enough.any():
            continue
        top = top_k(weights, valid, k)
        other = random_k(valid & ~top, k, generator)
        for name, erased in (("top", top), ("random", other)):
            if erased_decision is None:
                break
            q = erased_decision(erased)
            got.add(f"erasure/{name}{k}/flip", (q.argmax(-1) != predicted).double()[enough])
            got.add(f"erasure/{name}{k}/jsd", jensen_shannon(p, q)[enough])
    if forward is not None and methods:
        found = attributions(forward, task.explained_class(p), methods, steps)
        for method, importance in found.items():
            tau = kendall_tau(weights, importance, valid)
            got.add(f"tau/{method}", tau.tau)
            got.add(
                f"significant/{method}", ((tau.tau > 0) & (tau.p < 0.05)).double().where(~tau.tau.isnan(), math.nan)
            )
        if "integrated_gradients" in found and "leave_one_out" in found:
            tau = kendall_tau(found["integrated_gradients"], found["leave_one_out"], valid)
            got.add("tau/reference", tau.tau)
            got.add(
                "significant/reference", ((tau.tau > 0) & (tau.p < 0.05)).double().where(~tau.tau.isnan(), math.nan)
            )
    return how
