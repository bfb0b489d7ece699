"""Training attention against gold evidence: the families of models whose faithfulness is known by construction.

* **Supervised** (``task.attention_supervision`` = lambda > 0): the surveys' joint objective
  (Liu, Utiyama, Finch & Sumita, "Neural Machine Translation with Supervised Attention", COLING
  2016; the strong supervision of memory networks, Weston et al. 2015 and Sukhbaatar et al.
  2015, §4): loss = task loss + lambda * CE(gold vector, weights), where the gold vector spreads
  one unit of mass uniformly over the gold keys of a query (the supporting facts of a bAbI
  question, the source characters aligned to an output character, the queried pair of an
  associative recall). Logged as ``<stage>/attention_loss``.
* **Decoupled** (``task.decouple_attention`` = mu > 0): the attention pushed away from the
  evidence while the decision keeps being trained on the labels, as Wiegreffe & Pinter's
  adversary ("Attention is not not Explanation", EMNLP 2019, §5; Jain & Wallace 2019, §4.2)
  keeps a model's predictions while its attention moves: loss = task loss + mu * -log(1 - m),
  m the weight mass on the gold keys. A model that still decides right reads the evidence
  some other way (earlier layers, the vectors' norms), so its attention is not what its
  decision rests on. Logged as ``<stage>/decoupling_loss``.
* **Random** (``task.random_attention``): every attention block draws its weights at random
  (the ablation's ``random`` mode, a Dirichlet(1) point over the valid keys) in training and
  at test: attention that by construction explains nothing.

:class:`AttentionTraining` is the whole of it for every task that offers the options: one check
and one step. A task gives its gold views (``gold_views``, which ``python -m framework evaluate``
scores) and marks those that train (``GoldView.trained``); the step reads them from its own
forward pass (``Task.watch``, the weights in the graph) and trains each trained view towards its
gold and away from its evidence (:func:`view_gold`), averaging the losses over the views.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor, nn

from ..attention import blocks_in
from ..errors import ConfigError
from ..evaluation.protocol import GoldView
from .base import Step


def gold_distribution(gold: Tensor, keys: Optional[Tensor] = None) -> Tensor:
    """Gold attention vectors: uniform over the gold keys of each query (zero where none);
    ``gold`` and ``keys`` (..., Q, K) bool."""
    gold = gold.bool() if keys is None else gold.bool() & keys.bool()
    target = gold.float()
    return target / target.sum(-1, keepdim=True).clamp(min=1)


def attention_supervision_loss(
    weights: Tensor, gold: Tensor, keys: Optional[Tensor] = None, eps: float = 1e-8
) -> Tensor:
    """Cross-entropy -sum_k g_k log w_k between the gold vectors g (uniform over the gold keys,
    ``gold`` (..., Q, K) bool, broadcastable; within the valid ``keys``) and the weights w
    (..., Q, K), averaged over the queries that have gold keys (0 when none has)."""
    target = gold_distribution(gold.expand_as(weights), None if keys is None else keys.expand_as(weights))
    counted = target.sum(-1) > 0
    if not counted.any():
        return weights.sum() * 0
    cross_entropy = -(target * weights.clamp(min=eps).log()).sum(-1)
    return cross_entropy[counted].mean()


def attention_decoupling_loss(
    weights: Tensor, gold: Tensor, keys: Optional[Tensor] = None, eps: float = 1e-6
) -> Tensor:
    """-log(1 - m + eps), m = sum_k w_k [k gold and valid] the weight mass of a query on its gold
    keys (``weights`` (..., Q, K), ``gold`` and ``keys`` (..., Q, K) bool, broadcastable),
    averaged over the queries that have gold keys (0 when none has): 0 when no weight is on
    the evidence, growing without bound as all of it is."""
    gold = gold.expand_as(weights).bool()
    if keys is not None:
        gold = gold & keys.expand_as(weights).bool()
    counted = gold.any(-1)
    if not counted.any():
        return weights.sum() * 0
    mass = (weights * gold.to(weights.dtype)).sum(-1)
    return -(1 - mass + eps).clamp(min=eps).log()[counted].mean()


def view_gold(view: GoldView) -> tuple[Tensor, Tensor]:
    """What a trained view's weights learn towards (supervision) and away from (decoupling),
    (..., Q, K) bool each: the gold keys of its scored queries, both times; for an alignment
    (``possible`` given), a query's sure links, or its possible ones where it has no sure link,
    and all its links, sure or possible, as the evidence."""
    gold = view.gold.bool() & view.queries.bool().unsqueeze(-1)
    if view.possible is None:
        return gold, gold
    possible = view.possible.bool()
    return torch.where(gold.any(-1, keepdim=True), gold, possible), possible


def randomise_attention(model: nn.Module) -> list[str]:
    """Every attention block of ``model`` whose weights are not replaced already draws them at
    random from now on (``ablation = "random"``, see :func:`framework.attention.ablation`); an
    ablation context entered later replaces them for its duration and gives them back. The
    names of the blocks set."""
    chosen = [name for name, block in blocks_in(model).items() if block.ablation is None]
    for name in chosen:
        model.get_submodule(name).ablation = "random"
    return chosen


class AttentionTraining:
    """The attention-training options of a task (a mixin, listed before the Task class).

    ``attention_supervision`` (lambda >= 0), ``decouple_attention`` (mu >= 0) and
    ``random_attention`` (see the module's docstring), set by :meth:`attention_options` in the
    task's ``__init__``. :meth:`check` refuses lambda and mu without data with gold evidence (its
    module's ``gold_evidence``) and sets random attention on the model; :meth:`step` adds the
    trained gold views' losses. A task states what the losses need, as their errors say it:
    ``gold_data``, the data (None: the task has no gold views to train, and refuses lambda and
    mu), and ``gold_model``.
    """

    logged = {"attention_loss": "min", "decoupling_loss": "min"}

    attention_supervision: float = 0.0
    decouple_attention: float = 0.0
    random_attention: bool = False
    gold_data: Optional[str] = None
    gold_model: str = "a model with attention"

    def attention_options(
        self, attention_supervision: float = 0.0, decouple_attention: float = 0.0, random_attention: bool = False
    ) -> None:
        if random_attention and (attention_supervision or decouple_attention):
            raise ConfigError(
                "task.random_attention=true draws the weights at random: it takes no "
                "task.attention_supervision or task.decouple_attention (set them to 0)"
            )
        self.attention_supervision, self.decouple_attention = attention_supervision, decouple_attention
        self.random_attention = bool(random_attention)

    @property
    def trains_on_gold(self) -> bool:
        """Whether the loss reads the gold evidence (supervision or decoupling)."""
        return bool(self.attention_supervision or self.decouple_attention)

    def gold_options(self) -> str:
        """The options that read gold, as a config would set them (for error messages)."""
        given = [
            f"task.{key}={getattr(self, key)}"
            for key in ("attention_supervision", "decouple_attention")
            if getattr(self, key)
        ]
        return " and ".join(given)

    def gold_losses(
        self, weights: Tensor, gold: Tensor, keys: Optional[Tensor] = None, evidence: Optional[Tensor] = None
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """lambda * :func:`attention_supervision_loss` of ``weights`` (..., Q, K) against ``gold`` +
        mu * :func:`attention_decoupling_loss` of their mass on ``evidence`` (default: ``gold``;
        wider where the gold vectors pick a part of the evidence, as a date's sure links do of
        its possible ones), and the two losses to log (those that count)."""
        total, logs = weights.sum() * 0, {}
        if self.attention_supervision:
            supervision = attention_supervision_loss(weights, gold, keys)
            total = total + self.attention_supervision * supervision
            logs["attention_loss"] = supervision.detach()
        if self.decouple_attention:
            decoupling = attention_decoupling_loss(weights, gold if evidence is None else evidence, keys)
            total = total + self.decouple_attention * decoupling
            logs["decoupling_loss"] = decoupling.detach()
        return total, logs

    def view_losses(self, view: GoldView) -> tuple[Tensor, dict[str, Tensor]]:
        """:meth:`gold_losses` of a trained view's weights, towards and away from its :func:`view_gold`."""
        gold, evidence = view_gold(view)
        return self.gold_losses(view.weights.float(), gold, view.keys, evidence)

    def carries_gold(self, batch: Any) -> bool:
        """Whether ``batch`` holds gold evidence; every batch of data with gold does, unless the
        task's batches carry it as an option (vision's optional masks)."""
        return True

    def check(self, model: nn.Module, data: Any) -> None:
        """Beyond the base's checks: the attention losses need a task with gold views to train
        and data with gold evidence; with ``random_attention``, :func:`randomise_attention` of the
        model (an error naming the option when the model has no attention block)."""
        super().check(model, data)
        if self.trains_on_gold and self.gold_data is None:
            raise ConfigError(
                f"{self.gold_options()} needs a task with gold views to train; {type(self).__name__} has "
                "none: set them to 0"
            )
        if self.trains_on_gold and not getattr(data, "gold_evidence", False):
            raise ConfigError(
                f"{self.gold_options()} needs {self.gold_data}; {type(data).__name__} has none: set them to 0"
            )
        if (
            self.random_attention
            and not randomise_attention(model)
            and not any(getattr(m, "ablation", None) for m in model.modules())
        ):
            raise ConfigError(
                f"task.random_attention=true needs a model with attention; {type(model).__name__} has "
                "no attention block"
            )

    def step(self, model: nn.Module, batch: Any, stage: str) -> Step:
        """The base's step; while :attr:`trains_on_gold`, its forward pass is ``watch``'s (the
        weights in the graph) and its loss adds :meth:`gold_losses` of the trained views of that
        pass's ``gold_views`` (:func:`view_gold`), averaged over the views::

            loss = task loss + 1/V sum_v [lambda CE(gold_v, w_v) + mu -log(1 - m_v)]

        A pass whose views all rest (memory hops under linear start), or a batch that carries no
        gold (:meth:`carries_gold`), trains on the task's loss alone; a batch with gold whose pass
        gives no gold view (a model without the attention the task's views read) raises, naming
        what the task needs."""
        if not self.trains_on_gold:
            return super().step(model, batch, stage)
        target = self.split(batch)[1]
        watched = self.watch(model, batch, detach=False)
        loss, logs = self.losses(watched.output, target)
        views = self.gold_views(model, batch, watched)
        if not views and self.carries_gold(batch):
            raise ConfigError(f"{self.gold_options()} needs {self.gold_model}; {type(model).__name__} has none")
        parts = [self.view_losses(view) for view in views if view.trained]
        if parts:
            loss = loss + sum(part[0] for part in parts) / len(parts)
            logs = {**logs, **{key: torch.stack([part[1][key] for part in parts]).mean() for key in parts[0][1]}}
        return Step(loss, self.preds(watched.output), target, logs or None, self.metric_inputs(batch) or None)
