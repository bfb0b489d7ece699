"""Captum's measures of an explanation, for the attention and the attributions of the faithfulness test.

* **Infidelity** (Yeh, Hsieh, Suggala, Inouye & Ravikumar, "On the (In)fidelity and Sensitivity
  of Explanations", NeurIPS 2019; ``captum.metrics.infidelity``): E_I[(I . phi - (f(x) - f(x - I)))^2],
  the expected squared error of the explanation phi as a linear model of what perturbations I
  do to f, the explained class's probability (the predicted one unless the task says otherwise).
  The inputs are the items' gates (all 1: item i enters as g_i x_i at the item layer), so phi is
  a score per item (an attention weight, gradient x input summed over the item's vector ...)
  and I erases a random subset of the valid items (each with probability :data:`DROP`): I . phi
  is the score of the erased items. ``normalize=True`` rescales phi by the best factor first
  (Captum's beta, as the authors' code does), so that attention (summing to 1) and attributions
  (any scale) compare. Lower is more faithful; beside it, the infidelity of random scores.
* **Max-sensitivity** (the same paper; ``captum.metrics.sensitivity_max``): the largest change
  ||phi(x + d) - phi(x)|| / ||phi(x)|| of the explanation when the items' vectors move by d,
  uniform in an L-infinity ball of radius r (Captum's default perturbation). Lower is more
  robust. The attention is recomputed from the moved vectors where the task can
  (:attr:`~framework.evaluation.protocol.ItemForward.attention`); attributions always are.

Captum repeats each example's perturbations next to each other (``repeat_interleave``); the
tasks' item forwards take a batch's copies one batch after the other: :func:`tiled` and
:func:`interleaved` convert between the two orders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional

import torch
from torch import Tensor, nn

from .faithfulness import METHODS, Collected, attributions
from .protocol import EvaluationHooks, ItemForward
from .table import Row

#: The chance that an infidelity perturbation erases a valid item.
DROP = 0.25


def tiled(x: Tensor, size: int, copies: int) -> Tensor:
    """Rows (T * size * copies, ...) with each example's ``copies`` next to each other (within
    each of T blocks), reordered as T * copies blocks of the ``size`` examples each."""
    blocks = len(x) // (size * copies)
    return x.unflatten(0, (blocks, size, copies)).transpose(1, 2).flatten(0, 2)


def interleaved(x: Tensor, size: int, copies: int) -> Tensor:
    """The inverse of :func:`tiled`."""
    blocks = len(x) // (size * copies)
    return x.unflatten(0, (blocks, copies, size)).transpose(1, 2).flatten(0, 2)


def gated_probabilities(forward: ItemForward) -> Callable[[Tensor], Tensor]:
    """The decision's probabilities (B S, K) as a function of the items' gates (B S, N), each
    example's S copies next to each other (Captum's order)."""
    vectors = forward.vectors.float()
    size = len(vectors)

    def run(gates: Tensor) -> Tensor:
        copies = len(gates) // size
        given = vectors.repeat(copies, 1, 1) * tiled(gates, size, copies).unsqueeze(-1)
        return interleaved(forward.forward(given).float().softmax(-1), size, copies)

    return run


def infidelities(
    forward: ItemForward, valid: Tensor, explanations: dict[str, Tensor], target: Tensor, samples: int, seed: int = 0
) -> dict[str, Tensor]:
    """(B,) Captum's normalised infidelity of each explanation (B, N) (scores of the items),
    under ``samples`` random erasures of the ``valid`` items (B, N); every explanation is
    judged on the same erasures (the generator restarts from ``seed`` for each)."""
    from captum.metrics import infidelity

    gates = torch.ones(valid.shape, device=forward.vectors.device)
    found = {}
    for name, scores in explanations.items():
        generator = torch.Generator().manual_seed(seed)

        def perturb(inputs: Tensor, *, generator: torch.Generator = generator) -> tuple[Tensor, Tensor]:
            copies = len(inputs) // len(valid)
            keep = valid.bool().repeat_interleave(copies, 0)
            erased = (torch.rand(inputs.shape, generator=generator).to(inputs.device) < DROP) & keep
            return erased.to(inputs.dtype), inputs * ~erased

        with torch.no_grad():
            found[name] = infidelity(
                gated_probabilities(forward),
                perturb,
                gates,
                scores.float() * valid,
                target=target,
                n_perturb_samples=samples,
                normalize=True,
            ).detach()
    return found


def attention_explanation(forward: ItemForward) -> Optional[Callable[..., tuple[Tensor]]]:
    """The item attention (B S, N) as a function of the items' vectors (B S, N, D), Captum's
    order, in a tuple (``sensitivity_max`` reads a tensor's rows as its tuple's items); None
    where the task does not give it."""
    if forward.attention is None:
        return None
    size = len(forward.vectors)

    def explain(vectors: Any, **unused: Any) -> Tensor:
        vectors = vectors[0] if isinstance(vectors, tuple) else vectors  # Captum gives its inputs as a tuple
        copies = len(vectors) // size
        return (interleaved(forward.attention(tiled(vectors, size, copies)).float(), size, copies),)

    return explain


def attribution_explanation(forward: ItemForward, method: str, steps: int) -> Callable[..., tuple[Tensor]]:
    """An attribution (B S, N) by ``method`` as a function of the items' vectors (B S, N, D) and
    the target (B S,), Captum's order (its own forward passes stack any number of such blocks),
    in a tuple."""
    size = len(forward.vectors)

    def explain(vectors: Any, target: Tensor) -> Tensor:
        vectors = vectors[0] if isinstance(vectors, tuple) else vectors
        copies = len(vectors) // size

        def decision(given: Tensor) -> Tensor:
            return interleaved(forward.forward(tiled(given, size, copies)), size, copies)

        return (attributions(ItemForward(vectors, decision), target, (method,), steps)[method],)

    return explain


def sensitivities(
    forward: ItemForward,
    explanations: dict[str, Callable[..., tuple[Tensor]]],
    target: Tensor,
    samples: int,
    radius: float,
    seed: int = 0,
) -> dict[str, Tensor]:
    """(B,) Captum's max-sensitivity of each explanation function of the item vectors, over
    ``samples`` perturbations within ``radius``; the same perturbations for each (seeded)."""
    from captum.metrics import sensitivity_max

    found = {}
    for name, explain in explanations.items():
        torch.manual_seed(seed)  # Captum's default perturbation draws from torch's generator
        found[name] = sensitivity_max(
            explain, forward.vectors.float(), perturb_radius=radius, n_perturb_samples=samples, target=target
        ).detach()
    return found


def captum_rows(
    model: nn.Module,
    task: EvaluationHooks,
    batches: Iterable[Any],
    tests: Sequence[str],
    methods: Sequence[str] = METHODS,
    steps: int = 16,
    samples: int = 10,
    radius: float = 0.02,
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> list[Row]:
    """The rows of ``tests`` (``infidelity``, ``sensitivity``) of the item attention and of the
    attributions in ``methods`` over ``batches``."""
    got = Collected()
    blocks: tuple[str, ...] = ()
    for number, batch in enumerate(batches):
        with torch.no_grad():
            items = task.item_attention(model, batch)
        if items is None:
            return [Row(test, "-", "-", "-", None, None, "n/a: the model weighs no input items") for test in tests]
        forward = task.item_forward(model, batch)
        if forward is None:
            return [Row(test, "-", "-", "-", None, None, "n/a: the task gives no item vectors") for test in tests]
        blocks = items.blocks or blocks
        valid = items.valid.bool()
        with torch.no_grad():
            explained = task.explained_class(task.decision(model, batch))
        if "infidelity" in tests:
            scores = {
                "attention": items.weights.float(),
                **attributions(forward, explained, methods, steps),
                "random scores": torch.rand(valid.shape, generator=torch.Generator().manual_seed(seed + number)).to(
                    valid.device
                ),
            }
            for name, value in infidelities(forward, valid, scores, explained, samples, seed + number).items():
                got.add(f"infidelity/{name}", value)
        if "sensitivity" in tests:
            functions = {name: attribution_explanation(forward, name, steps) for name in methods}
            attention = attention_explanation(forward)
            if attention is not None:
                functions = {"attention": attention, **functions}
            for name, value in sensitivities(forward, functions, explained, samples, radius, seed + number).items():
                got.add(f"sensitivity/{name}", value)
    label = ", ".join(blocks) or "-"
    rows = []
    if "infidelity" in tests:
        for name in ("attention", *methods):
            rows.append(
                Row(
                    "infidelity",
                    label,
                    f"{name}, {samples} erasures (p {DROP}), {got.count(f'infidelity/{name}')} examples",
                    "infidelity (normalised)",
                    got.mean(f"infidelity/{name}"),
                    got.mean("infidelity/random scores"),
                    "random scores",
                )
            )
    if "sensitivity" in tests:
        explained = [name for name in ("attention", *methods) if f"sensitivity/{name}" in got.values]
        rows += [
            Row(
                "sensitivity",
                label,
                f"{name}, {samples} perturbations within {radius:g}, {got.count(f'sensitivity/{name}')} examples",
                "max sensitivity",
                got.mean(f"sensitivity/{name}"),
            )
            for name in explained
        ]
        if "attention" not in explained:
            rows.insert(
                len(rows) - len(explained),
                Row(
                    "sensitivity",
                    label,
                    "attention",
                    "max sensitivity",
                    None,
                    None,
                    "n/a: the task recomputes no attention from item vectors",
                ),
            )
    return rows
