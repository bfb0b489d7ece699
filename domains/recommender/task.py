"""Sequential-recommendation tasks: a training objective plus one ranking evaluation.

Evaluation (validation, test) ranks each user's held-out item. The protocol is a task
setting, and the metric names carry it, so a figure always says how it was measured:

* ``full`` (default): every item is a candidate except padding and the user's history
  items (the target itself always stays a candidate); metrics ``hr@10``, ``ndcg@10``, ``mrr``.
* ``sampled``: the target and ``num_negatives`` items the user never interacted with,
  drawn uniformly once per user by the data module (the SASRec paper's 100-negative
  protocol); metrics ``hr@10_sampled100``, ``ndcg@10_sampled100``, ``mrr_sampled100``.

Step outputs for the metrics: candidate scores (B, C) and the target's column (B,).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection

from framework.attention import capture
from framework.tasks import Step, Task

from .metrics import MRR, NDCG, HitRate
from .pictures import history_attention

Protocol = Literal["full", "sampled"]


def _number_of_items(model: nn.Module) -> int:
    if not isinstance(getattr(model, "num_items", None), int):
        raise TypeError(f"recommender tasks need a model with a num_items attribute; {type(model).__name__} has none")
    return model.num_items


def without_padding(scores: Tensor) -> Tensor:
    """Scores over item ids 0 .. I with column 0 (padding) set to -inf."""
    return scores.index_fill(-1, torch.tensor([0], device=scores.device), float("-inf"))


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

    mode = "max"

    def __init__(self, protocol: Protocol = "full", num_negatives: int = 100, k: int = 10) -> None:
        super().__init__()
        if protocol not in ("full", "sampled"):
            raise ValueError(f"task.protocol must be 'full' or 'sampled', got {protocol!r}")
        if num_negatives < 1:
            raise ValueError(f"task.num_negatives must be at least 1, got {num_negatives}")
        if k < 1:
            raise ValueError(f"task.k must be at least 1, got {k}")
        self.protocol, self.num_negatives, self.k = protocol, num_negatives, k
        self.label = "" if protocol == "full" else f"_sampled{num_negatives}"
        self.monitor = f"val/ndcg@{k}{self.label}"

    def metrics(self) -> MetricCollection:
        k, label = self.k, self.label
        metrics = {f"hr@{k}{label}": HitRate(k), f"ndcg@{k}{label}": NDCG(k), f"mrr{label}": MRR()}
        return MetricCollection(metrics, compute_groups=False)  # equal states after one batch must not merge them

    def check(self, model: nn.Module, data: Any) -> None:
        """The model scores exactly the data's items (more would add never-seen candidates)."""
        items = getattr(data, "num_items", None)
        if items is not None and _number_of_items(model) != items:
            raise ValueError(f"model.num_items is {model.num_items} but the data has {items} items: "
                             f"set model.num_items={items}")
        super().check(model, data)

    def step(self, model: nn.Module, batch: Any, stage: str) -> Step:
        if stage == "train":
            return self.train_step(model, batch)
        scores, column = self.rank(model, batch)
        return Step(F.cross_entropy(scores, column), scores, column)

    def train_step(self, model: nn.Module, batch: dict[str, Tensor]) -> Step:
        raise TypeError(f"{type(self).__name__} must define train_step(model, batch)")

    def rank(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """Candidate scores (B, C) and the target's column (B,) under the task's protocol."""
        history, target = batch["history"], batch["target"]
        if self.protocol == "sampled":
            negatives = batch["negatives"]
            if negatives.shape[1] < self.num_negatives:
                raise ValueError(f"task.num_negatives={self.num_negatives} but the data gives {negatives.shape[1]} "
                                 "negatives per user; raise data.num_negatives")
            candidates = torch.cat([target.unsqueeze(1), negatives[:, : self.num_negatives]], 1)
            return model(history, candidates, last=True), torch.zeros_like(target)
        return self.exclude_history(model(history, last=True), batch["seen"], target), target

    @staticmethod
    def exclude_history(scores: Tensor, seen: Tensor, target: Tensor) -> Tensor:
        """Scores (B, I + 1) with the ``seen`` items (B, S) and padding at -inf, the target kept."""
        target_scores = scores.gather(1, target.unsqueeze(1))
        masked = scores.scatter(1, seen, float("-inf"))
        return without_padding(masked).scatter(1, target.unsqueeze(1), target_scores)

    def predict(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        """The k items to recommend to each user (B, k): best scores first, history excluded."""
        scores = without_padding(model(batch["history"], last=True)).scatter(1, batch["seen"], float("-inf"))
        return scores.topk(self.k, dim=1).indices

    def write_predictions(self, prediction: Tensor, batch: dict[str, Tensor], sink: Any) -> None:
        """``recommendations.csv``: each user's index and the k recommended item ids, best first."""
        sink.take(len(prediction))
        rows = zip(batch["user"].tolist(), (" ".join(map(str, items)) for items in prediction.tolist()))
        sink.rows("recommendations.csv", ["user", f"top{self.k}_items"], rows)

    def images(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, list[Tensor]]:
        """``history_attention/<block>``: the attention of the batch's longest history over
        itself, cropped to its items (query position x key position, heads averaged). Each
        position n scores its own item, so a target-attention block (DIN) draws the same
        picture: the item at n attending the items up to n."""
        history = batch["history"]
        row = int((history > 0).sum(1).argmax())
        one, real = history[row:row + 1], history[row] > 0
        with capture(model) as maps:
            model(one, one.unsqueeze(-1))
        blocks = dict(model.named_modules())
        pictures = {}
        for name, records in maps.items():
            weights = blocks[name].weights_image(records[0])
            if weights is not None and weights.shape == (len(real), len(real)):
                pictures[f"history_attention/{name}"] = [history_attention(weights, real)]
        return pictures


class NextItemRanking(SequentialRanking):
    """Next-item training (SASRec, GRU4Rec, DIN): position n of a training row predicts item n + 1.

    With ``negatives: 0`` the loss is the cross-entropy over every item (softmax over the
    whole catalogue, which beats SASRec's one-negative binary loss: Klenitskiy & Vasilev,
    RecSys 2023); with ``negatives: m`` it is the cross-entropy of the target among itself
    and m uniform random items (sampled softmax), for models that score candidates one by
    one (DIN). A model with an ``observe(sequences)`` method (:class:`MostPopular`) is shown
    each training row first.

    Args:
        negatives: 0 for the full softmax, else sampled items per position.
        Others: as in :class:`SequentialRanking`.
    """

    def __init__(self, negatives: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        if negatives < 0:
            raise ValueError(f"task.negatives must be 0 (full softmax) or a positive count, got {negatives}")
        self.negatives = negatives

    def train_step(self, model: nn.Module, batch: dict[str, Tensor]) -> Step:
        sequence = batch["sequence"]
        if callable(observe := getattr(model, "observe", None)):
            observe(sequence)
        history, target = sequence[:, :-1], sequence[:, 1:]
        valid = target > 0
        if not self.negatives:
            preds, column = without_padding(model(history)[valid]), target[valid]
        else:
            shape = (*target.shape, self.negatives)
            sampled = torch.randint(1, _number_of_items(model) + 1, shape, device=target.device)
            candidates = torch.cat([target.unsqueeze(-1), sampled], -1)
            clash = torch.cat([torch.zeros_like(valid).unsqueeze(-1), sampled == target.unsqueeze(-1)], -1)
            preds = model(history, candidates).masked_fill(clash, float("-inf"))[valid]
            column = torch.zeros(len(preds), dtype=torch.long, device=preds.device)
        return Step(F.cross_entropy(preds, column), preds, column)


class MaskedItemRanking(SequentialRanking):
    """Cloze training (BERT4Rec): random items of the last ``max_len`` training items are
    replaced by the model's ``[mask]`` token and predicted from both sides (cross-entropy
    over every item). A row with no masked item gets its last item masked, the position
    that evaluation asks about.

    Args:
        mask_prob: the share of items masked (0.2 for MovieLens in the BERT4Rec paper).
        Others: as in :class:`SequentialRanking`.
    """

    def __init__(self, mask_prob: float = 0.2, **kwargs) -> None:
        super().__init__(**kwargs)
        if not 0.0 < mask_prob <= 1.0:
            raise ValueError(f"task.mask_prob must be in (0, 1], got {mask_prob}")
        self.mask_prob = mask_prob

    def train_step(self, model: nn.Module, batch: dict[str, Tensor]) -> Step:
        mask_token = getattr(model, "mask_token", None)
        if mask_token is None:
            raise TypeError(f"MaskedItemRanking needs a model with a [mask] token (BERT4Rec); "
                            f"{type(model).__name__} has no mask_token")
        sequence = batch["sequence"][:, 1:]
        real = sequence > 0
        masked = (torch.rand(sequence.shape, device=sequence.device) < self.mask_prob) & real
        masked[:, -1] |= ~masked.any(1) & real[:, -1]
        preds = without_padding(model(sequence.masked_fill(masked, mask_token))[masked])
        column = sequence[masked]
        return Step(F.cross_entropy(preds, column), preds, column)
