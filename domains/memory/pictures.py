"""Pictures of memory reads (matplotlib figures of :mod:`framework.pictures`): the attention of
every hop over the story's sentences, and of a memory's read heads over its slots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from torch import Tensor

from framework.pictures import heatmap, picture

SUPPORT_COLOUR = "tab:red"


@picture
def hop_image(weights: Tensor, support: Tensor, sentences: Optional[Sequence[str]] = None, title: str = "") -> Any:
    """(hops, N) attention over the story's N sentences, drawn as the story is read: one row per
    sentence (oldest at the top), named by its words (``sentences``; its number without them),
    one column per hop; the supporting facts ((N,) bool) are starred and red."""
    support = support.bool().tolist()
    names = [str(n + 1) for n in range(len(support))] if sentences is None else list(sentences)
    fig = heatmap(
        weights.T,
        rows="story sentence (* red: supporting fact)",
        columns="hop",
        row_labels=[f"{name} *" if s else name for name, s in zip(names, support)],
        column_labels=[str(k + 1) for k in range(weights.shape[0])],
        caption_text=title,
    )
    for label, supporting in zip(fig.axes[0].get_yticklabels(), support):
        if supporting:
            label.set_color(SUPPORT_COLOUR)
            label.set_fontweight("bold")
    return fig


@picture
def weights_image(weights: Tensor, title: str = "") -> Any:
    """(rows, slots) weights of one read head: where each query (a step of the sequence) reads
    among the memory's slots (NTM: its rows; Hopfield: the stored steps); slots that no query
    reads at all (padded steps, masked before the normalisation) hatched."""
    return heatmap(
        weights, rows="query (step)", columns="memory slot", valid_columns=weights.ne(0).any(0), caption_text=title
    )
