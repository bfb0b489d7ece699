"""What the recommender domain draws for the loggers (a matplotlib figure of
:mod:`framework.pictures`): the attention of a user's history over itself."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from framework.pictures import heatmap, picture


@picture
def history_attention(weights: Tensor, real: Tensor, items: Tensor, causal: bool = False, title: str = "") -> Any:
    """The attention (N, N) of a history's positions over its positions (query x key, heads
    averaged), cut to the positions of its items (``real``: (N,) bool, False at padding),
    each row and column named by its item id (``items``: (N,)); a ``causal`` block's keys after
    each query hatched as masked, not drawn as weight 0."""
    ids = [str(i) for i in items[real].tolist()]
    count = len(ids)
    return heatmap(
        weights[real][:, real],
        rows="query: item in the history (id)",
        columns="key: item in the history (id)",
        row_labels=ids,
        column_labels=ids,
        valid=torch.ones(count, count, dtype=torch.bool).tril() if causal else None,
        caption_text=title + (" (causal: the later items masked)" if causal else ""),
    )
