"""A task: how a batch becomes a loss, predictions and metrics (:class:`Task`, its contract).

Domains add tasks and models; the one ``TaskModule`` runs them all. A batch is either a
``(inputs, target)`` pair or a mapping with a ``"target"`` entry whose other entries are
the model's keyword arguments (``{"tokens": ..., "mask": ..., "target": ...}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, Optional

from torch import Tensor, nn
from torchmetrics import MetricCollection

from ..attention import capture
from ..data.sizes import SIZES, stated
from ..errors import ConfigError
from ..evaluation.protocol import EvaluationHooks, Watched

if TYPE_CHECKING:
    from ..runs import PredictionSink


#: Whether lower (``min``) or higher (``max``) values of a metric are better.
Direction = Literal["min", "max"]


class Step(NamedTuple):
    """What one training/validation/test step produced.

    The metrics are updated as ``metrics.update(preds, target, **metric_inputs)`` (each metric
    takes the keyword arguments its ``update`` names). ``logs`` (scalar tensors) are logged as
    ``<stage>/<name>``, averaged over the epoch.
    """

    loss: Tensor
    preds: Any  # what the metrics consume (logits, scores ...)
    target: Any
    logs: Optional[dict[str, Tensor]] = None  # aux loss, penalty ...
    metric_inputs: Optional[dict[str, Tensor]] = None  # named inputs of the metrics beyond preds and target


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


class Task(EvaluationHooks, nn.Module):
    """Base class of tasks. One step (:meth:`step`), the same for every task::

        inputs, target = task.split(batch)              # what the model reads, what it must predict
        output         = task.run_model(model, inputs)  # the model's call
        loss, logs     = task.losses(output, target)    # the objective, and scalars logged beside it
        preds          = task.preds(output)             # what the metrics consume: metrics(), training_metrics()
        extra          = task.metric_inputs(batch)      # further named metric inputs (a bAbI task id ...)

    and the hooks around it::

        outputs, refs  = task.decode(model, batch)      # a generating task's outputs: generation_metrics()
        task.check(model, data)                         # when a run starts: the model and task fit the data
        prediction     = task.predict(model, batch)     # predict's output, then write_predictions(prediction, ...)
        pictures       = task.images(model, batch)      # pictures of a validation batch for the loggers
        views          = task.gold_views(model, batch)  # the gold hook: GoldView per hop, layer, head, of the pass
                                                        #   task.watch(model, batch); evaluate scores them all,
                                                        #   the attention-training options train the trained ones

    A task overrides the hooks it needs (a task whose training differs in kind from its
    evaluation, such as a recommender's sampled objective, its ``step``). The gold views' losses:
    :class:`~framework.tasks.attention_training.AttentionTraining`; the evaluation's other hooks:
    :class:`~framework.evaluation.protocol.EvaluationHooks`. ``monitor`` names the validation
    metric that selects the best checkpoint; whether higher or lower is better, of it and of
    every metric the task logs, is :meth:`directions`' one table.
    """

    monitor: str = "val/loss"
    #: Whether lower (``min``) or higher (``max``) is better, of each scalar the task logs beside its
    #: metrics (``<stage>/loss`` and the names of ``losses``' logs); its metrics declare it themselves
    #: (torchmetrics' ``higher_is_better``). A subclass lists the logs it adds; the tables of a
    #: task's classes are merged.
    logged: ClassVar[dict[str, Direction]] = {"loss": "min"}

    def directions(self) -> dict[str, Direction]:
        """Whether higher (``max``) or lower (``min``) is better, of every metric the task logs, by
        the name it is logged under (``val/acc``, ``train/loss``): from :attr:`logged` and the
        metrics' own ``higher_is_better``. What picks the best checkpoint, stops early, ranks a
        comparison's runs, directs a search and makes the W&B summary's best values.

        Raises:
            TypeError: a metric of the task that declares no ``higher_is_better``.
        """
        logged = self.logged_scalars()
        found: dict[str, Direction] = {}
        for stage, collections in (
            ("train", (self.training_metrics(),)),
            ("val", (self.metrics(), self.generation_metrics())),
            ("test", (self.metrics(), self.generation_metrics())),
        ):
            found.update({f"{stage}/{name}": direction for name, direction in logged.items()})
            for collection in collections:
                for name, metric in collection.items(keep_base=True, copy_state=False):
                    better = getattr(metric, "higher_is_better", None)
                    if better is None:
                        raise TypeError(
                            f"{type(metric).__name__} ({stage}/{name}) does not say whether higher or lower is "
                            "better: set its higher_is_better"
                        )
                    found[f"{stage}/{name}"] = "max" if better else "min"
        return found

    @classmethod
    def logged_scalars(cls) -> dict[str, Direction]:
        """The :attr:`logged` tables of the task's classes, merged (a subclass's entries win)."""
        logged: dict[str, Direction] = {}
        for klass in reversed(cls.__mro__):
            logged.update(vars(klass).get("logged", {}))
        return logged

    def reading_order(self, names: Iterable[str]) -> list[str]:
        """Logged names (``val/acc``, ``attention/block0/entropy`` ...) in the order a reader looks
        for them, as the validate and test tables and the plain progress lines show them: the
        task's metrics first, in the order it declares them, then its losses (:attr:`logged`),
        then anything else by name, and the attention statistics (``attention/...``) last."""
        table = self.directions()
        position = {name: index for index, name in enumerate(table)}
        losses = set(self.logged_scalars())

        def rank(name: str) -> tuple[int, int, str]:
            if name.startswith("attention/"):
                return 3, 0, name
            if name not in position:
                return 2, 0, name
            return (1 if name.split("/", 1)[-1] in losses else 0), position[name], name

        return sorted(names, key=rank)

    def direction(self, metric: str, key: str = "checkpoint.monitor") -> Direction:
        """:meth:`directions`' entry of ``metric``; a :class:`ConfigError` naming ``key`` and the
        metrics the task logs when it logs no such metric."""
        table = self.directions()
        if metric not in table:
            logged = ", ".join(name for name in table if name.startswith(metric.split("/")[0] + "/")) or ", ".join(
                table
            )
            raise ConfigError(f"{key}={metric}: {type(self).__name__} logs no such metric; it logs {logged}")
        return table[metric]

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

    def watch(self, model: nn.Module, batch: Any, detach: bool = True) -> Watched:
        """The forward pass that :meth:`gold_views` reads: :meth:`run_model`'s output for the
        batch's inputs and the records of every attention block (``detach=False``: kept in the
        graph, as the training step keeps them). A task whose gold views read the weights that
        its model returns on request (``need_weights=True``) makes that call instead."""
        with capture(model, detach=detach) as maps:
            output = self.run_model(model, self.split(batch)[0])
        return Watched(output, maps)

    def metrics(self) -> MetricCollection:
        """A fresh metric collection; the TaskModule keeps one copy for validation and one for test
        (and, unless :meth:`training_metrics` says otherwise, one for training)."""
        return MetricCollection({})

    def training_metrics(self) -> MetricCollection:
        """A fresh collection of the metrics of the training steps' predictions: :meth:`metrics`, unless
        the training step predicts something else than evaluation does (a recommender ranks the
        next item among a few sampled ones in training, among every item in evaluation), where
        the names must say so."""
        return self.metrics()

    def generation_metrics(self) -> MetricCollection:
        """A fresh collection of the metrics of what the model generates (corpus BLEU, word error
        rate ...), updated with :meth:`decode`'s pair; the TaskModule keeps one copy for
        validation and one for test and logs them as ``<stage>/<name>``. None by default."""
        return MetricCollection({})

    def decode(self, model: nn.Module, batch: Any) -> Optional[tuple[Any, Any]]:
        """What the model generates for a validation or test batch and what it should have
        generated, as :meth:`generation_metrics` take them (``update(outputs, references)``):
        decoded strings and their references, pointed positions and the target order. The
        TaskModule calls it once per batch, after the step. None by default: nothing generated."""
        return None

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
                    raise ConfigError(
                        f"{owner}.{name} is {given} but the data has {wanted}: set {owner}.{name}="
                        f"{wanted}{' or more' if rule == 'at least' else ''}"
                    )

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
            raise TypeError(
                f"{type(self).__name__}.predict gives {type(prediction).__name__}, not class scores (B, K): "
                "define its write_predictions to say how to write it"
            )
        score, label = prediction.detach().float().softmax(-1).max(-1)
        sink.rows(
            "predictions.csv",
            ["example", "class", "score"],
            zip(sink.take(len(label)), label.tolist(), (f"{s:.6f}" for s in score.tolist())),
        )

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        """Pictures of a validation batch for the loggers (predicted masks beside the truth,
        alignments ...): name -> list of (H, W, 3) uint8 images. None by default.

        Called by the ``attention_maps`` callback under ``torch.no_grad``, on every rank.
        """
        return {}
