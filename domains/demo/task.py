"""Classification of the demo's token sequences, read out at their last real token: the
evaluation's hooks over the tokens, and the read-out's attention against the gold tokens."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import torch
from torch import Tensor, nn

from framework.evaluation.protocol import GoldView, ItemAttention, Watched, erase_tokens
from framework.tasks import Classification, call_model

#: The batch entry of the gold evidence (B, N) bool (the queried pair of an associative recall):
#: read by the evaluation and the attention losses, never by the model.
GOLD = "gold"


def read_out(maps: Mapping[str, list], mask: Tensor) -> Optional[tuple[str, Tensor]]:
    """The last attention block's row (B, N) of the last real token over the tokens, heads
    averaged and renormalised over the real tokens (``mask`` (B, N))::

        w_n = a_{t n} [n real] / sum_{n'} a_{t n'} [n' real],  t the last real token,

    and the block's name; None without a block that relates tokens to tokens (records whose query
    and key grids are the N tokens: not the rows of ISAB's inducing points nor Linformer's projections)."""
    tokens = (mask.shape[1],)
    found = [
        (name, records[-1])
        for name, records in maps.items()
        if records and records[-1].queries == records[-1].keys == tokens and isinstance(records[-1].weights, Tensor)
    ]
    if not found:
        return None
    name, record = found[-1]
    weights = record.weights.float()
    while weights.dim() > 3:
        weights = weights.mean(1)
    mask = mask.bool()
    last = mask.sum(1) - 1
    row = weights[torch.arange(len(weights), device=weights.device), last.clamp(min=0)] * mask
    return name, row / row.sum(-1, keepdim=True).clamp(min=1e-12)


class SequenceClassification(Classification):
    """:class:`framework.tasks.Classification` of the demo's token batches ``{"tokens" (B, N),
    "mask" (B, N), "target" (B,)}``, with ``"gold"`` (B, N) bool where the data knows the
    evidence (:class:`~domains.demo.AssociativeRecall`: the queried pair), which the model never reads.

    Evaluation (``python -m framework evaluate``): the items are the tokens, weighed by the
    read-out's attention (:func:`read_out`: the last attention block's row of the last real
    token, which the classifier reads out), erased by cutting them out; the gold is the batch's
    ``gold`` tokens. The attention-training families train that row (:meth:`gold_views`).

    Args: those of :class:`framework.tasks.Classification`.
    """

    gold_data = "token batches with gold evidence (domains.demo.AssociativeRecall)"

    def run_model(self, model: nn.Module, inputs: Any) -> Tensor:
        """The logits (B, K) of the tokens and their mask (the gold left out)."""
        return call_model(model, {key: value for key, value in inputs.items() if key != GOLD})

    def item_attention(self, model: nn.Module, batch: Any) -> Optional[ItemAttention]:
        """The read-out's attention over the tokens (:func:`read_out`)."""
        found = read_out(self.watch(model, batch).maps, batch["mask"])
        if found is None:
            return None
        return ItemAttention(found[1], batch["mask"].bool(), (found[0],))

    def gold_attention(self, batch: Any) -> Optional[Tensor]:
        """The batch's gold tokens (B, N) where it has them."""
        return batch.get(GOLD)

    def gold_views(self, model: nn.Module, batch: Any, watched: Optional[Watched] = None) -> list[GoldView]:
        """``items``, trained: the read-out's attention (B, 1, N) against the gold tokens."""
        gold = self.gold_attention(batch)
        if gold is None:
            return []
        found = read_out((watched or self.watch(model, batch)).maps, batch["mask"])
        if found is None:
            return []
        return [
            GoldView(
                "items",
                found[1][:, None],
                gold[:, None].bool(),
                batch["mask"].bool()[:, None],
                gold.any(-1, keepdim=True),
                trained=True,
            )
        ]

    def erase_items(self, batch: Any, erased: Tensor) -> Any:
        """The tokens ``erased`` cut out of each sequence (:func:`erase_tokens`), and out of the gold."""
        tokens, mask = erase_tokens(batch["tokens"], batch["mask"], erased)
        erased_batch = {**batch, "tokens": tokens, "mask": mask}
        if GOLD in batch:  # the gold tokens that stay, where they moved
            erased_batch[GOLD] = erase_tokens(batch[GOLD].long(), batch["mask"], erased, pad=0)[0].bool() & mask
        return erased_batch

    def item_layer(self, model: nn.Module) -> Optional[nn.Module]:
        """The model's first token embedding."""
        return next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
