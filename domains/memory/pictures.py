"""Pictures of memory reads (matplotlib figures of :mod:`framework.pictures`): the attention of
every hop over the story's sentences, and of a memory's read heads over its slots."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from framework.pictures import heatmap, picture

SUPPORT_COLOUR = "tab:red"


@picture
def hop_image(weights: Tensor, support: Tensor, title: str = "") -> Any:
    """(hops, N) attention over the story's N sentences: one row per hop (top: hop 1), one
    column per sentence (oldest left); the supporting facts ((N,) bool) are starred and red."""
    support = support.bool().tolist()
    fig = heatmap(
        weights,
        rows="hop",
        columns="story sentence (* red: supporting fact)",
        row_labels=[str(k + 1) for k in range(weights.shape[0])],
        column_labels=[f"{n + 1}*" if s else str(n + 1) for n, s in enumerate(support)],
        caption_text=title,
    )
    for label, supporting in zip(fig.axes[0].get_xticklabels(), support):
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
