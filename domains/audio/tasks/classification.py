"""Clip classification with a picture of where the model listened: attention over time frames."""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.attention import AttentionBlock, capture
from framework.evaluation.protocol import ItemAttention, ItemForward, repeat_batch
from framework.tasks import Classification, inputs_of

from ..models.frontend import check_sample_rate
from ..pictures import spectrogram_with_attention


class AudioClassification(Classification):
    """:class:`~framework.tasks.Classification` of clips (cross-entropy, ``acc``, macro ``f1``)
    that also draws, for the loggers, the log-mel spectrogram of the first validation clip
    with the weights of the model's pooling over time (``images/time_attention``).

    The weights are those of the model's ``pool`` attention block (captured during one
    forward pass of the clip), averaged over its queries and stretched from the pooled frames
    to the spectrogram's frames. Models without one (the CNN, ``pooling: none``) get the
    spectrogram alone. Both are cut to the clip's real frames.

    Evaluation (``python -m framework evaluate``): the items are the frames the pooling over
    time weighs (the encoder's or the GRU's output frames), with the pooling's weights
    (averaged over its queries); an item is erased, and attributed, at the pooling's input
    (its frame vector set to zero): the representation erasure of Serrano & Smith.
    """

    def check(self, model: nn.Module, data: Any) -> None:
        """The front end must expect the data's sample rate (its mel scale depends on it)."""
        check_sample_rate(model, data)
        super().check(model, data)

    def images(self, model: nn.Module, batch: Any) -> dict[str, list[Tensor]]:
        frontend = getattr(model, "frontend", None)
        if frontend is None:
            return {}
        clip = {name: value[:1] for name, value in inputs_of(batch).items()}
        features, mask = frontend(**clip)
        weights = None
        if isinstance(getattr(model, "pool", None), AttentionBlock):
            with capture(model, "pool") as maps:
                model(**clip)
            pooled = maps["pool"][-1].weights[0].float().mean(0)  # (N',)
            weights = F.interpolate(pooled.view(1, 1, -1), size=features.shape[-1], mode="nearest").view(-1)
        frames = features.shape[-1] if mask is None else int(mask[0].sum())
        title = "first validation clip" + (
            ", weights of the pooling over time (heads averaged)" if weights is not None else ""
        )
        return {
            "time_attention": [
                spectrogram_with_attention(
                    features[0, :, :frames], None if weights is None else weights[:frames], title
                )
            ]
        }

    # ------------------------------------------------------------------ evaluation hooks

    def _pool(self, model: nn.Module) -> Optional[nn.Module]:
        pool = getattr(model, "pool", None)
        return pool if isinstance(pool, AttentionBlock) else None

    def _pool_inputs(self, model: nn.Module, pool: nn.Module, batch: Any) -> tuple[Tensor, Optional[Tensor], Any]:
        """The frames (B, N, D) and mask the pooling receives, and its captured record."""
        seen: list[tuple] = []
        hook = pool.register_forward_pre_hook(lambda module, args: seen.append(args))
        try:
            with capture(model, "pool") as maps:
                self.decision(model, batch)
        finally:
            hook.remove()
        frames, mask = seen[-1][0], seen[-1][1] if len(seen[-1]) > 1 else None
        return frames, mask, maps["pool"][-1]

    def item_attention(self, model: nn.Module, batch: Any) -> Optional[ItemAttention]:
        """The pooling's weights over the frames, averaged over its queries."""
        pool = self._pool(model)
        if pool is None:
            return None
        frames, mask, record = self._pool_inputs(model, pool, batch)
        weights = record.weights.float()
        while weights.dim() > 2:
            weights = weights.mean(1)
        valid = torch.ones(weights.shape, dtype=torch.bool, device=weights.device) if mask is None else mask.bool()
        return ItemAttention(weights, valid, ("pool",))

    def item_forward(self, model: nn.Module, batch: Any) -> Optional[ItemForward]:
        """The frames at the pooling's input and the logits as their function."""
        pool = self._pool(model)
        if pool is None:
            return None
        with torch.no_grad():
            frames, _, _ = self._pool_inputs(model, pool, batch)

        def forward(vectors: Tensor) -> Tensor:
            times = len(vectors) // len(frames)
            swap = pool.register_forward_pre_hook(lambda module, args: (vectors.to(args[0].dtype), *args[1:]))
            try:
                return self.decision(model, repeat_batch(batch, times))
            finally:
                swap.remove()

        return ItemForward(frames.detach(), forward)
