"""A task: how a batch becomes a loss, predictions and metrics.

Domains add tasks and models; the one ``TaskModule`` runs them all. A batch is either a
``(inputs, target)`` pair or a mapping with a ``"target"`` entry whose other entries are
the model's keyword arguments (``{"tokens": ..., "mask": ..., "target": ...}``).

One step, the same for every task (:meth:`Task.step`)::

    inputs, target = task.split(batch)              # what the model reads, what it must predict
    output         = task.run_model(model, inputs)  # the model's call
    loss, logs     = task.losses(output, target)    # the objective, and scalars to log beside it
    preds          = task.preds(output)             # what the metrics consume
    extra          = task.metric_inputs(batch)      # further named metric inputs (a bAbI task id ...)

A task overrides the hooks it needs; only a task whose training differs from its
evaluation in kind (a recommender's sampled objective against its ranking) overrides
``step`` itself.

**Evaluation hooks** (``python -m framework evaluate``, :mod:`framework.evaluation`). A task
whose model weighs input items (tokens, story sentences, a node's neighbours, audio frames,
pixels) says so, and the faithfulness and intrinsic tests run on it; every hook has a
default that means "not available here"::

    batch    = task.evaluation_batch(model, batch) # the test batch as examples (graphs: one subgraph per node)
    logits   = task.decision(model, batch)         # (B, K): the decision whose faithfulness is tested
    items    = task.item_attention(model, batch)   # ItemAttention: (B, N) weights over the items, their validity
    erased   = task.erase_items(batch, mask)       # the batch without the chosen items (None: cannot)
    layer    = task.item_layer(model)              # the module whose output holds one vector per item
    vectors  = task.item_forward(model, batch)     # ItemForward: those vectors and logits as their function
    gold     = task.gold_attention(batch)          # (B, N) bool: the gold items, where the data knows them
    views    = task.gold_views(model, batch)       # GoldView per hop, layer and head: weights against gold
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

import torch
from torch import Tensor, nn
from torchmetrics import MetricCollection

from ..data.sizes import SIZES, stated

if TYPE_CHECKING:
    from ..callbacks.predictions import PredictionSink



class Step(NamedTuple):
    """What one training/validation/test step produced.

    The metrics are updated as ``metrics.update(preds, target, **metric_inputs)`` (each metric
    takes the keyword arguments its ``update`` names). ``logs`` are logged as
    ``<stage>/<name>``: tensors averaged over the epoch, torchmetrics ``Metric`` objects that
    the task updates itself (BLEU ...) computed at its end.
    """

    loss: Tensor
    preds: Any  # what the metrics consume (logits, scores ...)
    target: Any
    logs: Optional[dict[str, Any]] = None  # aux loss, penalty, corpus metrics ...
    metric_inputs: Optional[dict[str, Tensor]] = None  # named inputs of the metrics beyond preds and target


class ItemAttention(NamedTuple):
    """Where a decision looks among its input items (:meth:`Task.item_attention`).

    weights (B, N): the attention of each example's decision over its N items (tokens,
    sentences, neighbours, frames, pixels), summing to 1 over the valid ones; valid (B, N)
    bool; blocks: the names of the blocks these weights come from (module names, as for
    :func:`~framework.attention.ablation`), which the permutation test permutes.
    """

    weights: Tensor
    valid: Tensor
    blocks: tuple[str, ...] = ()


class ItemForward(NamedTuple):
    """The items' vectors and the decision as their function (:meth:`Task.item_forward`).

    vectors (B, N, D), detached; forward maps vectors (S * B, N, D), the batch repeated S
    times along the first axis (as Captum's integrated gradients stacks its steps), to the
    decision's logits (S * B, K). Attribution methods take gradients through ``forward``.
    """

    vectors: Tensor
    forward: Callable[[Tensor], Tensor]


class GoldView(NamedTuple):
    """One view of a model's attention against gold attention (:meth:`Task.gold_views`).

    name: what the view is (``hop1``, ``layer0/head2``, ``alignment`` ...). weights (B, Q, K):
    the attention of Q queries (decoder steps, hops, pixels) over K keys (source tokens,
    sentences, pixels); gold (B, Q, K): the gold keys of each query, bool (supporting facts,
    sure alignment links, the drawn digit) or a graded reference (float) for rank
    correlation; keys (B, Q, K) bool, broadcastable: the keys a query may attend; queries
    (B, Q) bool: the queries that are scored (those with gold). possible (B, Q, K) bool:
    the possible alignment links (a superset of sure ones), given for alignments, which are
    then also scored by the alignment error rate. group (B,) long: examples' groups (the bAbI
    task), reported apart too, as ``<group_name> <group>``.
    """

    name: str
    weights: Tensor
    gold: Tensor
    keys: Tensor
    queries: Tensor
    possible: Optional[Tensor] = None
    group: Optional[Tensor] = None
    group_name: str = "group"


def repeat_batch(inputs: Any, times: int) -> Any:
    """Model inputs with every tensor repeated ``times`` times along its first axis (mappings,
    tuples and lists walked; other values kept)."""
    if times == 1:
        return inputs
    if isinstance(inputs, Tensor):
        return torch.cat([inputs] * times) if inputs.dim() else inputs
    if isinstance(inputs, Mapping):
        return {key: repeat_batch(value, times) for key, value in inputs.items()}
    if isinstance(inputs, (tuple, list)):
        return type(inputs)(repeat_batch(value, times) for value in inputs)
    return inputs


def first_tensor(value: Any) -> Optional[Tensor]:
    """A module output's tensor: itself, or the first tensor of a tuple or list."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (tuple, list)):
        return next((v for v in value if isinstance(v, Tensor)), None)
    return None


def replace_first_tensor(value: Any, new: Tensor) -> Any:
    """A module output with its (first) tensor replaced by ``new``."""
    if isinstance(value, Tensor):
        return new
    items, done = [], False
    for v in value:
        if not done and isinstance(v, Tensor):
            items.append(new)
            done = True
        else:
            items.append(v)
    return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)


def as_items(output: Tensor, size: int) -> Tensor:
    """A layer output as one vector per item of each of ``size`` examples: (B, N, D) as is, a
    feature map (B, C, H, W) as (B, H W, C) (pixels are the items), and (B S, W, D) (the words
    of B documents of S sentences) as (B, S W, D)."""
    if output.dim() == 4:
        return output.flatten(2).transpose(1, 2)
    return output if output.shape[0] == size else output.reshape(size, -1, output.shape[-1])


def from_items(vectors: Tensor, shape: tuple[int, ...]) -> Tensor:
    """The inverse of :func:`as_items`: item vectors back in a layer output's ``shape``."""
    if len(shape) == 4:
        return vectors.transpose(1, 2).reshape(shape)
    return vectors.reshape(shape)


def call_model(model: nn.Module, inputs: Any) -> Any:
    """Call ``model`` with a batch's inputs: a mapping as keyword arguments, else positionally."""
    if isinstance(inputs, Mapping):
        return model(**inputs)
    return model(inputs)


def split_batch(batch: Any) -> tuple[Any, Tensor]:
    """``(inputs, target)`` of a batch in either convention."""
    if isinstance(batch, Mapping):
        if "target" not in batch:
            raise KeyError(f"a batch mapping needs a 'target' entry; it has {sorted(batch)}")
        return inputs_of(batch), batch["target"]
    inputs, target = batch
    return inputs, target


def inputs_of(batch: Any) -> Any:
    """The model inputs of a batch that may or may not carry a target (prediction)."""
    if isinstance(batch, Mapping):
        return {k: v for k, v in batch.items() if k != "target"}
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0]
    return batch


class Task(nn.Module):
    """Base class of tasks.

    Subclasses define :meth:`losses` and :meth:`metrics`, and override the other hooks of
    :meth:`step` where their batches or outputs need it (see the module's docstring).
    ``monitor`` and ``mode`` name the validation metric that selects the best checkpoint.
    """

    monitor: str = "val/loss"
    mode: str = "min"

    def losses(self, output: Any, target: Any) -> tuple[Tensor, dict[str, Tensor]]:
        """The loss to minimise and further scalars to log (``{"aux_loss": ...}``), from the
        model's output and the target."""
        raise TypeError(f"{type(self).__name__} must define losses(output, target) -> (loss, logs)")

    def split(self, batch: Any) -> tuple[Any, Any]:
        """``(model inputs, target)`` of a batch (default: :func:`split_batch`)."""
        return split_batch(batch)

    def run_model(self, model: nn.Module, inputs: Any) -> Any:
        """The model's output for the inputs (default: :func:`call_model`)."""
        return call_model(model, inputs)

    def preds(self, output: Any) -> Any:
        """What the metrics consume of the output (default: the output itself)."""
        return output

    def metric_inputs(self, batch: Any) -> dict[str, Tensor]:
        """Named metric inputs beyond predictions and target; none by default."""
        return {}

    def step(self, model: nn.Module, batch: Any, stage: str) -> Step:
        """One training, validation or test step: the hooks above, in their order."""
        inputs, target = self.split(batch)
        output = self.run_model(model, inputs)
        loss, logs = self.losses(output, target)
        return Step(loss, self.preds(output), target, logs or None, self.metric_inputs(batch) or None)

    def metrics(self) -> MetricCollection:
        """A fresh metric collection; the TaskModule keeps one copy per stage."""
        return MetricCollection({})

    def check(self, model: nn.Module, data: Any) -> None:
        """Raise a ``ValueError`` that names the config keys when ``model`` or this task does not
        fit ``data``, for sizes a config states twice (a sample rate, a feature count ...).

        The TaskModule calls it when a run starts, after the data module's ``setup``, so a
        mismatch fails at once instead of training on wrong inputs (or failing with an index
        error later). The base checks the sizes of :data:`SIZES` that both the data and the
        model or task state; a task with sizes of its own extends it (calling ``super()``).
        """
        for name, rule in SIZES.items():
            wanted = stated(data, name)
            for owner, holder in (("model", model), ("task", self)):
                given = getattr(holder, name, None)
                if isinstance(wanted, int) and isinstance(given, int):
                    wrong = given < wanted if rule == "at least" else given != wanted
                else:
                    wrong = isinstance(wanted, list) and isinstance(given, (list, tuple)) and list(given) != wanted
                if wrong:
                    raise ValueError(f"{owner}.{name} is {given} but the data has {wanted}: set {owner}.{name}="
                                     f"{wanted}{' or more' if rule == 'at least' else ''}")

    def predict(self, model: nn.Module, batch: Any) -> Any:
        """What ``predict`` returns for a batch; by default what the metrics would consume."""
        return self.preds(self.run_model(model, inputs_of(batch)))

    def write_predictions(self, prediction: Any, batch: Any, sink: PredictionSink) -> None:
        """Write one batch's :meth:`predict` output into the run folder's ``predictions/``.

        The default takes class scores (B, K) and appends to ``predictions.csv`` the columns
        ``example`` (its index in the predicted split), ``class`` (the arg-max) and ``score``
        (its softmax probability). Tasks that predict something else override it.
        """
        if not (isinstance(prediction, Tensor) and prediction.dim() == 2 and prediction.is_floating_point()):
            raise TypeError(f"{type(self).__name__}.predict gives {type(prediction).__name__}, not class scores (B, K): "
                            "define its write_predictions to say how to write it")
        score, label = prediction.detach().float().softmax(-1).max(-1)
        sink.rows("predictions.csv", ["example", "class", "score"],
                  zip(sink.take(len(label)), label.tolist(), (f"{s:.6f}" for s in score.tolist())))

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        """Pictures of a validation batch for the loggers (predicted masks beside the truth,
        alignments ...): name -> list of (H, W, 3) uint8 images. None by default.

        Called by the ``attention_maps`` callback under ``torch.no_grad``, on every rank.
        """
        return {}

    # ------------------------------------------------------------------ evaluation hooks

    def evaluation_batch(self, model: nn.Module, batch: Any) -> Any:
        """A test batch as the faithfulness tests take it: examples along the first axis of
        every tensor (the default: the batch itself; graphs make one subgraph per node)."""
        return batch

    def decision(self, model: nn.Module, batch: Any) -> Tensor:
        """The logits (B, K) of the decision that the faithfulness tests perturb: by default
        what the metrics consume of the model's output."""
        return self.preds(self.run_model(model, self.split(batch)[0]))

    def item_attention(self, model: nn.Module, batch: Any) -> Optional[ItemAttention]:
        """The weights (B, N) with which each example's decision reads its input items, or
        None when the model has none (the default; a no-attention baseline)."""
        return None

    def erase_items(self, batch: Any, erased: Tensor) -> Optional[Any]:
        """The batch with the items ``erased`` (B, N) bool removed from the input (tokens cut
        out, edges dropped), or None when the task cannot remove items (the default): the
        erasure test then sets the items' vectors at :meth:`item_layer` to zero."""
        return None

    def item_layer(self, model: nn.Module) -> Optional[nn.Module]:
        """The module whose output holds one vector per item, (B, N, D) or a feature map
        (B, C, H, W) of pixels (its first tensor when it returns a tuple); None by default."""
        return None

    def item_forward(self, model: nn.Module, batch: Any) -> Optional[ItemForward]:
        """The items' vectors and :meth:`decision` as their function, for attribution methods
        (gradient x input, integrated gradients, leave-one-out). By default from
        :meth:`item_layer`: its output is recorded, then replaced by the given vectors."""
        layer = self.item_layer(model)
        if layer is None:
            return None
        seen: list[Tensor] = []
        hook = layer.register_forward_hook(lambda module, args, output: seen.append(first_tensor(output)))
        try:
            with torch.no_grad():
                size = len(self.decision(model, batch))
        finally:
            hook.remove()
        like = seen[0]

        def forward(vectors: Tensor) -> Tensor:
            times = vectors.shape[0] // size
            replaced = from_items(vectors, (like.shape[0] * times, *like.shape[1:]))
            swap = layer.register_forward_hook(lambda module, args, output: replace_first_tensor(output, replaced))
            try:
                return self.decision(model, repeat_batch(batch, times))
            finally:
                swap.remove()

        return ItemForward(as_items(like, size).detach(), forward)

    def gold_attention(self, batch: Any) -> Optional[Tensor]:
        """The gold items (B, N) bool of each example, where the data knows them (bAbI's
        supporting facts); None by default."""
        return None

    def gold_views(self, model: nn.Module, batch: Any) -> list[GoldView]:
        """The model's attention against gold attention, one :class:`GoldView` per hop, layer
        or head. By default the item attention against :meth:`gold_attention`, when both exist."""
        gold = self.gold_attention(batch)
        if gold is None:
            return []
        items = self.item_attention(model, batch)
        if items is None:
            return []
        return [GoldView("items", items.weights[:, None], gold[:, None].bool(), items.valid[:, None],
                         gold.any(-1, keepdim=True))]
