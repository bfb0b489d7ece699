"""Pictures of attention over text (matplotlib figures of :mod:`framework.pictures`): alignment
heat maps with the tokens on their axes, and words coloured by their weight."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from torch import Tensor

from framework.pictures import WEIGHTS, caption, colour_bar, figure, heatmap, picture

WORDS_PER_ROW = 10  # words in one row of the highlight picture; longer lines wrap


def shown(token: str) -> str:
    """A token as drawn: a blank one as ``␣``."""
    return token if token.strip() else "␣"


@picture
def alignment_image(weights: Tensor, source: Sequence[str], target: Sequence[str], title: str = "") -> Any:
    """A (target x source) heat map with the tokens on its axes.

    Args:
        weights: (M, N) attention of each target token over the source tokens.
        source: the N source tokens; target: the M target tokens.
    """
    if weights.shape != (len(target), len(source)):
        raise ValueError(
            f"alignment_image: weights must have shape ({len(target)}, {len(source)}) "
            f"(target, source tokens), got {tuple(weights.shape)}"
        )
    return heatmap(
        weights,
        rows="output token",
        columns="source token",
        row_labels=[shown(t) for t in target],
        column_labels=[shown(t) for t in source],
        caption_text=title,
    )


@picture
def highlight_image(lines: Sequence[Sequence[tuple[str, float]]], title: str = "") -> Any:
    """Words in cells coloured by their weight, in reading order, with a colour bar.

    Args:
        lines: lines of ``(token, weight)`` pairs (one line per sentence, or one line); a
            line longer than :data:`WORDS_PER_ROW` words wraps onto the next rows.
        title: the caption (labels, for instance).
    """
    rows, names = [], []
    for number, line in enumerate(lines):
        for start in range(0, max(len(line), 1), WORDS_PER_ROW):
            rows.append(line[start : start + WORDS_PER_ROW])
            names.append(f"{number + 1}" + (f" ({start + 1}-)" if start else ""))
    values = np.full((len(rows), WORDS_PER_ROW), np.nan)
    for r, row in enumerate(rows):
        values[r, : len(row)] = [weight for _, weight in row]
    import matplotlib

    fig = figure(10.0, 1.6 + 0.45 * len(rows))
    ax = fig.add_subplot()
    cells = ax.imshow(
        np.ma.masked_invalid(values),
        cmap=matplotlib.colormaps[WEIGHTS].with_extremes(bad="white"),
        vmin=0.0,
        vmax=max(float(np.nanmax(values)) if np.isfinite(values).any() else 1.0, 1e-12),
        aspect="auto",
        interpolation="nearest",
    )
    middle = cells.norm.vmax / 2
    for r, row in enumerate(rows):
        for c, (token, weight) in enumerate(row):
            ax.text(
                c, r, shown(token), ha="center", va="center", fontsize=8, color="white" if weight < middle else "black"
            )
    ax.set_xticks(range(WORDS_PER_ROW), [str(k + 1) for k in range(WORDS_PER_ROW)])
    ax.set_yticks(range(len(rows)), names)
    ax.set_xlabel("word of the line (reading order)")
    ax.set_ylabel("line" if len(lines) == 1 else "sentence")
    colour_bar(ax, cells, "attention weight")
    caption(fig, title)
    return fig
