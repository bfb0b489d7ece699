"""What the recommender domain draws for the loggers: the attention of a user's history over itself."""

from __future__ import annotations

from torch import Tensor

from framework.pictures import heatmap


def history_attention(weights: Tensor, real: Tensor) -> Tensor:
    """A heat map of the attention (N, N) of a history's positions over its positions (query
    x key, heads averaged), cropped to the rows and columns of its items (``real``: (N,) bool,
    False at padding)."""
    return heatmap(weights[real][:, real])
