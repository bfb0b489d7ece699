"""The evaluation protocol: what a task offers ``python -m framework evaluate``.

The tests of :mod:`framework.evaluation` read a model's attention through hooks that the task
implements (:class:`framework.tasks.Task` inherits :class:`EvaluationHooks`). A task whose
model weighs input items (tokens, story sentences, a node's neighbours, a node's meta-paths,
audio frames, pixels) says so, and the faithfulness and intrinsic tests run on it; every hook
has a default that means "not available here"::

    batch    = task.evaluation_batch(model, batch) # the test batch as examples (graphs: one subgraph per node)
    output   = task.forward_pass(model, batch)     # one test forward pass: what the ablation probe,
                                                   #   rollout and maps watch
    logits   = task.decision(model, batch)         # (B, K): the decision whose faithfulness is tested
    explained = task.explained_class(logits)       # (B,): the class whose probability ERASER and the
                                                   #   attributions follow (by default the predicted one)
    items    = task.item_attention(model, batch)   # ItemAttention: (B, N) weights over the items, their validity
    erased   = task.erase_items(batch, mask)       # the batch without the chosen items (None: cannot)
    layer    = task.item_layer(model)              # the module whose output holds one vector per item
    vectors  = task.item_forward(model, batch)     # ItemForward: those vectors and logits as their function
    gold     = task.gold_attention(batch)          # (B, N) bool: the gold items, where the data knows them
    views    = task.gold_views(model, batch)       # GoldView per hop, layer and head: weights against gold
                                                   #   (of a Watched pass when given: the training step's)

The evaluation's probes (which blocks the ablation can skip, the rollout, the maps) call
``forward_pass`` through :func:`probe_forward`: the model in eval mode, no gradient, no loss,
never the training step. Beside the hooks, the helpers their implementations share (:func:`repeat_batch`,
:func:`replaying`, :func:`erase_tokens` ...). This module imports torch alone; the evaluation
package, beneath the tasks, reads them only through this protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Optional

import torch
from torch import Tensor, nn


class ItemAttention(NamedTuple):
    """Where a decision looks among its input items (:meth:`EvaluationHooks.item_attention`).

    weights (B, N): the attention of each example's decision over its N items (tokens,
    sentences, neighbours, meta-paths, frames, pixels), summing to 1 over the valid ones;
    valid (B, N) bool; blocks: the names of the blocks these weights come from (module names,
    as for :func:`~framework.attention.ablation`), which the permutation test permutes.
    """

    weights: Tensor
    valid: Tensor
    blocks: tuple[str, ...] = ()


class ItemForward(NamedTuple):
    """The items' vectors and the decision as their function (:meth:`EvaluationHooks.item_forward`).

    vectors (B, N, D), detached; forward maps vectors (S * B, N, D), the batch repeated S
    times along the first axis (as Captum's integrated gradients stacks its steps), to the
    decision's logits (S * B, K). Attribution methods take gradients through ``forward``.
    attention, where the task gives it, maps the same vectors to the item attention's
    weights (S * B, N) (what :meth:`EvaluationHooks.item_attention` reads with those vectors):
    the explanation whose sensitivity to the vectors Captum's ``sensitivity_max`` measures.
    """

    vectors: Tensor
    forward: Callable[[Tensor], Tensor]
    attention: Optional[Callable[[Tensor], Tensor]] = None


class GoldView(NamedTuple):
    """One view of a model's attention against gold attention (:meth:`EvaluationHooks.gold_views`).

    name: what the view is (``hop1``, ``layer0/head2``, ``alignment`` ...). weights (B, Q, K):
    the attention of Q queries (decoder steps, hops, pixels) over K keys (source tokens,
    sentences, pixels); gold (B, Q, K): the gold keys of each query, bool (supporting facts,
    sure alignment links, the drawn digit) or a graded reference (float) for rank
    correlation; keys (B, Q, K) bool, broadcastable: the keys a query may attend; queries
    (B, Q) bool: the queries that are scored (those with gold). possible (B, Q, K) bool:
    the possible alignment links (a superset of sure ones), given for alignments, which are
    then also scored by the alignment error rate. group (B,) long: examples' groups (the bAbI
    task), reported apart too, as ``<group_name> <group>``. trained: whether the attention-training
    options (``task.attention_supervision``, ``task.decouple_attention``) train this view, its weights
    against its gold (see :mod:`framework.tasks.attention_training`); the others are only scored.
    """

    name: str
    weights: Tensor
    gold: Tensor
    keys: Tensor
    queries: Tensor
    possible: Optional[Tensor] = None
    group: Optional[Tensor] = None
    group_name: str = "group"
    trained: bool = False


class Watched(NamedTuple):
    """One forward pass as the gold views read it (:meth:`EvaluationHooks.gold_views`): the
    model's output for a batch and ``maps``, a capture's records of its attention blocks (block
    name -> one record per call, as :class:`framework.attention.capture` keeps them). In a
    training step the records keep their gradient."""

    output: Any
    maps: Mapping[str, list]


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


def replaying(
    batch: Any, size: int, swap: Callable[[Tensor], Any], call: Callable[[Any], Any]
) -> Callable[[Tensor], Any]:
    """A function of item vectors (S * B, N, D): ``call`` of the ``batch`` (``size`` = B
    examples) repeated S times, while ``swap(vectors)`` (a hook's handle, removed after the
    call) puts the vectors in place of the item layer's. How :class:`ItemForward`'s functions
    are made."""

    def run(vectors: Tensor) -> Any:
        handle = swap(vectors)
        try:
            return call(repeat_batch(batch, len(vectors) // size))
        finally:
            handle.remove()

    return run


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


def erase_tokens(tokens: Tensor, mask: Tensor, erased: Tensor, pad: Optional[int] = None) -> tuple[Tensor, Tensor]:
    """Tokens (..., N) with the ``erased`` ones cut out: the others move left in their order, the
    freed places at the end become padding (``pad``, default the value of a padded place, else
    0) with mask False. ``erased`` has the tokens' shape or is flat over their last two axes
    (the words of a document's sentences)."""
    erased = erased.reshape(mask.shape).bool()
    keep = mask.bool() & ~erased
    order = (~keep).to(torch.uint8).argsort(dim=-1, stable=True)  # kept tokens first, in their order
    if pad is None:
        padded = tokens[~mask.bool()]
        pad = int(padded[0]) if len(padded) else 0
    moved, kept = tokens.gather(-1, order), keep.gather(-1, order)
    return moved.masked_fill(~kept, pad), kept


def probe_forward(task: EvaluationHooks, model: nn.Module, batch: Any) -> Any:
    """One test forward pass of ``batch`` through the task's :meth:`EvaluationHooks.forward_pass`,
    as the evaluation's probes watch it: ``model`` put in eval mode (no dropout, no training-only
    noise such as MemN2N's random time noise), no gradient recorded, no loss computed."""
    model.eval()
    with torch.no_grad():
        return task.forward_pass(model, batch)


class EvaluationHooks:
    """The hooks of the evaluation, with defaults that mean "not available here".

    A mixin of :class:`framework.tasks.Task`: the defaults of :meth:`forward_pass` and
    :meth:`decision` call the task's ``split``, ``run_model`` and ``preds``. A task overrides
    the hooks its model and data support (see the module's docstring).
    """

    def evaluation_batch(self, model: nn.Module, batch: Any) -> Any:
        """A test batch as the faithfulness tests take it: examples along the first axis of
        every tensor (the default: the batch itself; graphs make one subgraph per node)."""
        return batch

    def forward_pass(self, model: nn.Module, batch: Any) -> Any:
        """One forward pass of an evaluation batch as the test step makes it, without loss,
        decoding or metrics: what the ablation probe (which blocks can be skipped) and the
        attention rollout watch. By default the model's output for the batch's inputs."""
        return self.run_model(model, self.split(batch)[0])

    def decision(self, model: nn.Module, batch: Any) -> Tensor:
        """The logits (B, K) of the decision that the faithfulness tests perturb: by default
        what the metrics consume of the model's output."""
        return self.preds(self.run_model(model, self.split(batch)[0]))

    def explained_class(self, decision: Tensor) -> Tensor:
        """(B,) long: the class of the decision's logits (B, K) whose probability the tests
        explain: ERASER's comprehensiveness and sufficiency follow it and the attribution methods
        take it as their target. By default the predicted class (argmax), as ERASER defines its
        measures. The flip tests always compare predicted classes."""
        return decision.argmax(-1)

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

        def swap(vectors: Tensor) -> Any:
            replaced = from_items(vectors, (like.shape[0] * (len(vectors) // size), *like.shape[1:]))
            return layer.register_forward_hook(lambda module, args, output: replace_first_tensor(output, replaced))

        def attention(repeated: Any) -> Optional[Tensor]:
            items = self.item_attention(model, repeated)
            return None if items is None else items.weights

        return ItemForward(
            as_items(like, size).detach(),
            replaying(batch, size, swap, lambda b: self.decision(model, b)),
            replaying(batch, size, swap, attention),
        )

    def gold_attention(self, batch: Any) -> Optional[Tensor]:
        """The gold items (B, N) bool of each example, where the data knows them (bAbI's
        supporting facts); None by default."""
        return None

    def gold_views(self, model: nn.Module, batch: Any, watched: Optional[Watched] = None) -> list[GoldView]:
        """The model's attention against gold attention, one :class:`GoldView` per hop, layer
        or head: of the pass ``watched`` where given (a training step's, whose loss adds the
        trained views'), else of a pass of the task's own. By default the item attention against
        :meth:`gold_attention`, when both exist (from a pass of its own, and trained by nothing)."""
        gold = self.gold_attention(batch)
        if gold is None:
            return []
        items = self.item_attention(model, batch)
        if items is None:
            return []
        return [
            GoldView(
                "items", items.weights[:, None], gold[:, None].bool(), items.valid[:, None], gold.any(-1, keepdim=True)
            )
        ]
