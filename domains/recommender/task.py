"""Sequential-recommendation tasks: a training objective plus one ranking evaluation.

Evaluation (validation, test) ranks each user's held-out item. The protocol is a task
setting, and the metric names carry it, so a figure always says how it was measured:

* ``full`` (default): every item is a candidate except padding and the user's history
  items (the target itself always stays a candidate); metrics ``hr@10``, ``ndcg@10``, ``mrr``.
* ``sampled``: the target and ``num_negatives`` items the user never interacted with,
  drawn uniformly once per user by the data module (the SASRec paper's 100-negative
  protocol); metrics ``hr@10_sampled100``, ``ndcg@10_sampled100``, ``mrr_sampled100``.

Step outputs for the metrics: candidate scores (B, C) and the target's column (B,).

Training (``task.loss``, see :mod:`.losses`) scores the real positions of the training rows
only, never the padding of short histories: SASRec's binary cross-entropy with sampled
negatives (``bce``), a sampled softmax (``sampled_softmax``) or the softmax over every item
(``softmax``). A count-based model (``model.counted``: :class:`~.models.MostPopular`) is not
trained: the task counts the data's training interactions into it once the data is set up.
The training metrics rank each position's next item among the candidates its loss scored, and
their names say which: ``train/mrr_sampled1`` for one sampled negative (HR@k and NDCG@k too
only where the candidates outnumber k: among 2 every item is in the top 10),
``train/hr@10_all_items`` for the softmax over every item (the row's own items included).

Evaluation hooks (``python -m framework evaluate``): the items are the history's items (B, N),
the decision the candidate scores that the metrics rank, the attention the read-out block's
weights over the history (:meth:`SequentialRanking.item_attention`).
"""

from __future__ import annotations

from typing import Any, Literal, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection

from framework.attention import AttentionBlock, capture
from framework.errors import ConfigError
from framework.evaluation.protocol import ItemAttention, ItemForward, erase_tokens, repeat_batch
from framework.tasks import Step, Task
from framework.values import NonNegativeInt, PositiveInt, declare

from . import losses as objectives
from .losses import Loss, without_padding
from .metrics import MRR, NDCG, HitRate
from .models.base import leading_padding
from .pictures import history_attention

Protocol = Literal["full", "sampled"]

#: ``task.mask_prob``: the share of the items that the Cloze task masks.
MaskShare = declare("MaskShare", float, "a number in (0, 1]", low=0, high=1, low_open=True)


def _number_of_items(model: nn.Module) -> int:
    if not isinstance(getattr(model, "num_items", None), int):
        raise TypeError(f"recommender tasks need a model with a num_items attribute; {type(model).__name__} has none")
    return model.num_items


def training_items(data: Any) -> Tensor:
    """Every training interaction's item of a set-up data module (``data.train_items``), or,
    for another module with a ``train`` split of rows, the items of those rows."""
    items = getattr(data, "train_items", None)
    if items is None and callable(getattr(data, "split", None)):
        items = data.split("train").sequence
    if items is None:
        raise TypeError(f"a counted model needs the training items: {type(data).__name__} has no train_items")
    return items


def readout_block(model: nn.Module) -> Optional[str]:
    """The module name of the block whose weights the prediction reads the history with: the
    last encoder layer's self-attention (SASRec, BERT4Rec) or the target attention (DIN's
    ``attention``); None for a model without one (GRU4Rec, MostPopular, ``attention=none``)."""
    layers = getattr(getattr(model, "encoder", None), "layers", None)
    if layers is not None and len(layers) and isinstance(getattr(layers[-1], "attention", None), AttentionBlock):
        return f"encoder.layers.{len(layers) - 1}.attention"
    if isinstance(getattr(model, "attention", None), AttentionBlock):
        return "attention"
    return None


def appended(model: nn.Module) -> int:
    """Columns a model appends to the history to predict the item after it, each taking the
    oldest column's place: 1 for BERT4Rec's ``[mask]`` (``model.mask_token``), else 0."""
    return int(getattr(model, "mask_token", None) is not None)


def on_history(values: Tensor, history: Tensor, extra: int) -> Tensor:
    """Values (B, M, ...) over the M columns a model encoded, back on the history's N columns
    (B, N, ...), zero elsewhere. The model's input is the history without its ``extra`` oldest
    columns followed by ``extra`` appended ones (N columns), of which it cut the s = N - M
    leading columns that are padding in every row (:func:`~.models.base.leading_padding`): its
    encoded column m < M - extra is the history's column s + extra + m; the appended columns
    are no history item."""
    size, n, m = len(history), history.shape[1], values.shape[1]
    start = n - m + extra
    placed = values.new_zeros(size, n, *values.shape[2:])
    placed[:, start:] = values[:, : m - extra]
    return placed


class SequentialRanking(Task):
    """Base of the recommender tasks: evaluation by ranking; subclasses add :meth:`train_step`.

    Args:
        protocol: ``full`` ranking over all items or ``sampled`` (target + negatives).
        num_negatives: negatives per user in the sampled protocol (the data module must
            draw at least as many: ``data.num_negatives``).
        k: the cut-off of HR@k and NDCG@k.

    Validation loss: cross-entropy of the target among the candidates. The checkpoint
    monitor is ``val/ndcg@k`` of the protocol. ``predict`` returns the top-k item ids
    (B, k) by full ranking, history excluded.
    """

    def __init__(self, protocol: Protocol = "full", num_negatives: PositiveInt = 100, k: PositiveInt = 10) -> None:
        super().__init__()
        self.protocol, self.num_negatives, self.k = protocol, num_negatives, k
        self.label = "" if protocol == "full" else f"_sampled{num_negatives}"
        self.monitor = f"val/ndcg@{k}{self.label}"

    def metrics(self) -> MetricCollection:
        k, label = self.k, self.label
        metrics = {f"hr@{k}{label}": HitRate(k), f"ndcg@{k}{label}": NDCG(k), f"mrr{label}": MRR()}
        return MetricCollection(metrics, compute_groups=False)  # equal states after one batch must not merge them

    def check(self, model: nn.Module, data: Any) -> None:
        """The model scores exactly the data's items (more would add never-seen candidates).

        The TaskModule calls this once the data module is set up (its cheap part: the item
        count is known, the negatives are not drawn yet), so a wrong ``model.num_items`` stops
        the run at once. It is also where a counted model (``model.counted``) gets the data's
        training interactions: the one hook that sees model and data together."""
        items = getattr(data, "num_items", None)
        if items is not None and _number_of_items(model) != items:
            raise ConfigError(
                f"model.num_items is {model.num_items} but the data has {items} items: set model.num_items={items}"
            )
        super().check(model, data)
        if getattr(model, "counted", False):
            model.count(training_items(data))

    def step(self, model: nn.Module, batch: Any, stage: str) -> Step:
        if stage == "train":
            if getattr(model, "counted", False):
                return self.counted_step(model, batch)
            return self.train_step(model, batch)
        scores, column = self.rank(model, batch)
        return Step(F.cross_entropy(scores, column), scores, column)

    def train_step(self, model: nn.Module, batch: dict[str, Tensor]) -> Step:
        raise TypeError(f"{type(self).__name__} must define train_step(model, batch)")

    def counted_step(self, model: nn.Module, batch: dict[str, Tensor]) -> Step:
        """A training step of a counted model: a zero loss (no gradient reaches the model, so
        the optimizer leaves it as it is) and, for the training metrics, the scores of the
        candidates the training loss would score (:meth:`train_step`, without gradient)."""
        if not bool(model.counts.any()):
            raise RuntimeError(
                f"{type(model).__name__} has no counts: the task counts data.train_items when "
                "the run starts (check(model, data) with a set-up recommender data module)"
            )
        with torch.no_grad():
            scored = self.train_step(model, batch)
        return Step(torch.zeros((), device=scored.preds.device, requires_grad=True), scored.preds, scored.target)

    def rank(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """Candidate scores (B, C) and the target's column (B,) under the task's protocol."""
        history, target = batch["history"], batch["target"]
        if self.protocol == "sampled":
            return model(history, self.sampled_candidates(batch), last=True), torch.zeros_like(target)
        return self.exclude_history(model(history, last=True), batch["seen"], target), target

    def sampled_candidates(self, batch: dict[str, Tensor]) -> Tensor:
        """The sampled protocol's candidates (B, 1 + num_negatives): the target, then its negatives."""
        negatives = batch["negatives"]
        if negatives.shape[1] < self.num_negatives:
            raise ConfigError(
                f"task.num_negatives={self.num_negatives} but the data gives {negatives.shape[1]} "
                "negatives per user; raise data.num_negatives"
            )
        return torch.cat([batch["target"].unsqueeze(1), negatives[:, : self.num_negatives]], 1)

    @staticmethod
    def exclude_history(scores: Tensor, seen: Tensor, target: Tensor) -> Tensor:
        """Scores (B, I + 1) with the ``seen`` items (B, S) and padding at -inf, the target kept.

        Without autograd, a fresh score table is changed in place (no copies of B x I scores)."""
        target_scores = scores.gather(1, target.unsqueeze(1))
        if scores.requires_grad or not scores.is_contiguous():
            scores = scores.clone()
        scores.scatter_(1, seen, float("-inf"))
        scores[:, 0] = float("-inf")
        return scores.scatter_(1, target.unsqueeze(1), target_scores)

    def predict(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        """The k items to recommend to each user (B, k): best scores first, history excluded."""
        scores = without_padding(model(batch["history"], last=True)).scatter(1, batch["seen"], float("-inf"))
        return scores.topk(self.k, dim=1).indices

    def write_predictions(self, prediction: Tensor, batch: dict[str, Tensor], sink: Any) -> None:
        """``recommendations.csv``: each user's index and the k recommended item ids, best first."""
        sink.take(len(prediction))
        rows = zip(batch["user"].tolist(), (" ".join(map(str, items)) for items in prediction.tolist()))
        sink.rows("recommendations.csv", ["user", f"top{self.k}_items"], rows)

    # Evaluation hooks: the items are the history's items, column by column of ``history`` (B, N).

    def evaluation_batch(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """A test batch whose history column that a model gives to its appended ``[mask]``
        (BERT4Rec drops the oldest one) is emptied: the model never reads it, and erasing items
        would otherwise shift it into view."""
        history = batch["history"]
        return {
            **batch,
            "history": history.masked_fill(torch.arange(history.shape[1], device=history.device) < appended(model), 0),
        }

    def decision(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        """The candidate scores (B, C) that the metrics rank under the task's protocol: every
        item, padding and history at -inf (``full``), or the target and its negatives (``sampled``)."""
        return self.rank(model, batch)[0]

    forward_pass = decision  # the test step's forward pass (the ablation probe's, the rollout's) is the ranking

    def predicted_items(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        """The item ids (B,) of each example's best-scored candidate."""
        column = self.decision(model, batch).argmax(-1)
        if self.protocol == "full":
            return column
        return self.sampled_candidates(batch).gather(1, column.unsqueeze(1)).squeeze(1)

    def item_attention(self, model: nn.Module, batch: dict[str, Tensor]) -> Optional[ItemAttention]:
        """The weights (B, N) with which the best-scored candidate is scored over the history's
        items (:func:`readout_block`): DIN's target attention of that candidate over the history;
        for SASRec and BERT4Rec, the last layer's attention of the predicting position (the last
        item, BERT4Rec's appended ``[mask]``) over the history positions, heads averaged, its
        weight on the ``[mask]`` itself left out and the rest renormalised:
        w_j = mean_h A_h[n, j] / sum_{j' item} mean_h A_h[n, j'].

        Valid: the history's items that the model reads (not padding, not BERT4Rec's oldest
        column). None for a model without attention, or whose weights are not over the
        positions (Linformer's projected rows)."""
        name = readout_block(model)
        if name is None:
            return None
        history, extra = batch["history"], appended(model)
        candidate = self.predicted_items(model, batch).unsqueeze(1)
        with capture(model, name) as maps:
            model(history, candidate, last=True)
        weights = maps[name][-1].weights
        encoded = (
            history.shape[1]
            - leading_padding(  # the columns of its input that the model encodes
                torch.cat([history[:, extra:], history.new_ones(len(history), extra)], 1)
            )
        )
        if not isinstance(weights, Tensor) or weights.dim() != 4 or weights.shape[-1] != encoded:
            return None
        row = on_history(weights.float().mean(1)[:, -1], history, extra)  # weights (B, h, queries, M): the last query's
        valid = (history > 0) & (torch.arange(history.shape[1], device=history.device) >= extra)
        row = row * valid
        return ItemAttention(row / row.sum(-1, keepdim=True).clamp(min=torch.finfo(row.dtype).tiny), valid, (name,))

    def erase_items(self, batch: dict[str, Tensor], erased: Tensor) -> dict[str, Tensor]:
        """The history without the ``erased`` (B, N) items: the others keep their order and move
        right, towards the prediction, and the freed columns on the left become padding (the
        left padding the models expect). ``seen`` is kept: the candidates do not change."""
        history = batch["history"]
        kept, _ = erase_tokens(history.flip(-1), (history > 0).flip(-1), erased.flip(-1), pad=0)
        return {**batch, "history": kept.flip(-1)}

    def item_layer(self, model: nn.Module) -> Optional[nn.Module]:
        """The item embedding (``model.items``), whose first call in a forward pass embeds the history."""
        layer = getattr(model, "items", None)
        return layer if isinstance(layer, nn.Embedding) else None

    def item_forward(self, model: nn.Module, batch: dict[str, Tensor]) -> Optional[ItemForward]:
        """The history items' embeddings (B, N, D) (zero on the columns the model does not
        encode) and :meth:`decision` as their function: the first call of the item embedding in
        a forward pass (the history's; later calls embed the candidates) gives the vectors."""
        layer = self.item_layer(model)
        if layer is None:
            return None
        history, extra = batch["history"], appended(model)
        seen: list[Tensor] = []
        hook = layer.register_forward_hook(lambda m, args, out: None if seen else seen.append(out))
        try:
            with torch.no_grad():
                self.decision(model, batch)
        finally:
            hook.remove()
        encoded = seen[0]  # (B, M, D): the encoded columns, appended ones last
        start = history.shape[1] + extra - encoded.shape[1]

        def forward(vectors: Tensor) -> Tensor:
            times = len(vectors) // len(history)
            tail = encoded[:, encoded.shape[1] - extra :].repeat(times, 1, 1)
            replaced = torch.cat([vectors[:, start:], tail], 1)
            calls: list[int] = []

            def swap(m: nn.Module, args: Any, out: Tensor) -> Optional[Tensor]:
                calls.append(1)
                return replaced if len(calls) == 1 else None

            handle = layer.register_forward_hook(swap)
            try:
                return self.decision(model, repeat_batch(batch, times))
            finally:
                handle.remove()

        return ItemForward(on_history(encoded, history, extra).detach(), forward)

    def images(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, list[Tensor]]:
        """``history_attention/<block>``: the attention of the batch's longest history over
        itself, cropped to its items (query position x key position, heads averaged). Each
        position n scores its own item, so a target-attention block (DIN) draws the same
        picture: the item at n attending the items up to n. A model that says it is ``causal`` gets
        the later items hatched as masked."""
        history = batch["history"]
        row = int((history > 0).sum(1).argmax())
        one = history[row : row + 1, leading_padding(history[row : row + 1]) :]  # the models cut that padding too
        real = one[0] > 0
        with capture(model) as maps:
            model(one, one.unsqueeze(-1))
        blocks = dict(model.named_modules())
        pictures = {}
        for name, records in maps.items():
            weights = blocks[name].weights_image(records[0])
            if weights is not None and weights.shape == (len(real), len(real)):
                pictures[f"history_attention/{name}"] = [
                    history_attention(
                        weights,
                        real,
                        one[0],
                        bool(getattr(model, "causal", False)),
                        f"the longest history of the batch attending itself: {name}, heads averaged",
                    )
                ]
        return pictures


def check_loss(loss: str, negatives: int) -> None:
    """The sampled losses need negatives (a relation of two keys: each key's domain is its type)."""
    if loss != "softmax" and negatives < 1:
        raise ConfigError(
            f"task.negatives must be at least 1 for task.loss={loss} (task.loss=softmax scores every "
            f"item instead), got {negatives}"
        )


class TrainingLoss:
    """The loss of M chosen positions of a batch (see :mod:`.losses`), and the training metrics
    of its candidates, shared by both tasks."""

    loss: str
    negatives: int
    k: int

    def training_metrics(self) -> MetricCollection:
        """The rank of each position's item among the candidates the loss scores, named for them:
        ``mrr_sampled<n>`` (the item and n sampled negatives), with ``hr@k_sampled<n>`` and
        ``ndcg@k_sampled<n>`` only when 1 + n > k (else HR@k is 1 whatever the model); for the
        softmax, ``hr@k_all_items``, ``ndcg@k_all_items``, ``mrr_all_items`` (every item a
        candidate, the row's own items included)."""
        label = "_all_items" if self.loss == "softmax" else f"_sampled{self.negatives}"
        metrics: dict[str, Any] = {f"mrr{label}": MRR()}
        if self.loss == "softmax" or 1 + self.negatives > self.k:
            metrics.update({f"hr@{self.k}{label}": HitRate(self.k), f"ndcg@{self.k}{label}": NDCG(self.k)})
        return MetricCollection(metrics, compute_groups=False)

    def position_loss(self, model: nn.Module, history: Tensor, where: Tensor, target: Tensor, rows: Tensor) -> Step:
        """The loss at the positions ``where`` (B, N) of ``history``, whose items are ``target``
        (M,); negatives avoid the items of the position's ``rows`` (B, L)."""
        if self.loss == "softmax":
            scores = without_padding(model(history, where=where))
            return Step(objectives.full_softmax(scores, target), scores, target)
        owner = where.nonzero(as_tuple=True)[0]
        negatives, hit = objectives.sample_training_negatives(rows, owner, self.negatives, _number_of_items(model))
        scores = model(history, torch.cat([target.unsqueeze(1), negatives], 1), where=where)
        positive, negative = scores[:, 0], scores[:, 1:]
        objective = objectives.bce if self.loss == "bce" else objectives.sampled_softmax
        loss = objective(positive, negative, hit)
        preds = objectives.candidate_logits(positive, negative, hit)
        return Step(loss, preds, torch.zeros(len(preds), dtype=torch.long, device=preds.device))


class NextItemRanking(TrainingLoss, SequentialRanking):
    """Next-item training (SASRec, GRU4Rec, DIN): position n of a training row predicts item
    n + 1, at every position holding an item (a history of L training items gives L - 1 targets
    within the row; padding positions give none).

    Losses (``loss``, see :mod:`.losses`): ``bce``, SASRec's binary cross-entropy with
    ``negatives`` sampled items per position (1 in the paper), the default; ``sampled_softmax``,
    the cross-entropy of the next item among itself and ``negatives`` sampled items;
    ``softmax``, the cross-entropy over every item (scores the whole catalogue at each real
    position; better rankings at small catalogues, Klenitskiy & Vasilev, RecSys 2023).
    Negatives are uniform over the items outside the user's training row, drawn anew every step.

    Args:
        loss: ``bce``, ``sampled_softmax`` or ``softmax``.
        negatives: sampled items per position (the sampled losses).
        Others: as in :class:`SequentialRanking`.
    """

    def __init__(self, loss: Loss = "bce", negatives: NonNegativeInt = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        check_loss(loss, negatives)
        self.loss, self.negatives = loss, negatives

    def train_step(self, model: nn.Module, batch: dict[str, Tensor]) -> Step:
        sequence = batch["sequence"]
        history, target = sequence[:, :-1], sequence[:, 1:]
        real = history > 0  # left padding: the target after a real item is real too
        return self.position_loss(model, history, real, target[real], sequence)


class MaskedItemRanking(TrainingLoss, SequentialRanking):
    """Cloze training (BERT4Rec): random items of the last ``max_len`` training items are
    replaced by the model's ``[mask]`` token and predicted from both sides. A row with no
    masked item gets its last item masked, the position that evaluation asks about.

    Losses (``loss``): ``softmax`` over every item at the masked positions (the paper's), the
    default; ``sampled_softmax`` or ``bce`` with ``negatives`` sampled items per masked position
    (uniform outside the row), for large catalogues.

    Args:
        mask_prob: the share of items masked (0.2 for MovieLens in the BERT4Rec paper).
        loss, negatives: as in :class:`NextItemRanking`.
        Others: as in :class:`SequentialRanking`.
    """

    def __init__(
        self, mask_prob: MaskShare = 0.2, loss: Loss = "softmax", negatives: NonNegativeInt = 100, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        check_loss(loss, negatives)
        self.mask_prob, self.loss, self.negatives = mask_prob, loss, negatives

    def train_step(self, model: nn.Module, batch: dict[str, Tensor]) -> Step:
        mask_token = getattr(model, "mask_token", None)
        if mask_token is None:
            raise TypeError(
                f"MaskedItemRanking needs a model with a [mask] token (BERT4Rec); "
                f"{type(model).__name__} has no mask_token"
            )
        sequence = batch["sequence"][:, 1:]
        real = sequence > 0
        masked = (torch.rand(sequence.shape, device=sequence.device) < self.mask_prob) & real
        masked[:, -1] |= ~masked.any(1) & real[:, -1]
        return self.position_loss(model, sequence.masked_fill(masked, mask_token), masked, sequence[masked], sequence)
