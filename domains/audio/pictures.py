"""Pictures of clips (matplotlib figures of :mod:`framework.pictures`): the log-mel spectrogram
with the model's attention over its time frames, or with a recogniser's alignment, under it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from torch import Tensor

from framework.pictures import array, caption, colour_bar, figure, picture, weight_map

FEATURES = "magma"  # the colour map of the spectrogram


def _spectrogram(ax: Any, features: Tensor) -> None:
    """(F, N) features on ``ax``: frames across, low frequencies at the bottom, a colour bar."""
    image = ax.imshow(array(features), origin="lower", aspect="auto", cmap=FEATURES, interpolation="nearest")
    ax.set_ylabel("mel bin")
    ax.set_xlabel("frame")
    colour_bar(ax, image, "feature (standardised)")


@picture
def spectrogram_with_attention(features: Tensor, weights: Optional[Tensor] = None, title: str = "") -> Any:
    """(F, N) features, and under them the (N,) weights of the model's pooling over the frames
    as one bar per frame (the spectrogram alone without weights)."""
    frames = features.shape[-1]
    fig = figure(min(14.0, 3.0 + 0.08 * frames), 6.0 if weights is not None else 4.0)
    if weights is None:
        _spectrogram(fig.add_subplot(), features)
    else:
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
        _spectrogram(top, features)
        top.set_xlabel("")
        bottom.bar(range(frames), array(weights), width=1.0, color="tab:orange")
        bottom.set_xlim(-0.5, frames - 0.5)
        bottom.set_xlabel("frame")
        bottom.set_ylabel("attention weight")
        bottom.grid(axis="y", alpha=0.3)
    caption(fig, title)
    return fig


@picture
def spectrogram_with_alignment(
    features: Tensor, alignment: Tensor, tokens: Optional[Sequence[str]] = None, title: str = ""
) -> Any:
    """(F, N) features and, under them, the (M, N') alignment of M output steps over N' encoder
    frames, each encoder frame stretched over the N / N' spectrogram frames it covers, so
    that each token is seen under the sound it was read from; ``tokens`` name the steps."""
    frames, steps = features.shape[-1], alignment.shape[0]
    reduction = max(1, -(-frames // alignment.shape[-1]))
    fig = figure(min(14.0, 3.0 + 0.08 * frames), 4.0 + 0.25 * steps)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, max(1.0, 0.25 * steps)))
    _spectrogram(top, features)
    top.set_xlabel("")
    weight_map(
        bottom,
        alignment,
        rows="output token",
        columns="frame",
        row_labels=tokens,
        extent=(-0.5, alignment.shape[-1] * reduction - 0.5, steps - 0.5, -0.5),
    )
    if tokens is not None and steps <= 40:
        bottom.set_yticks(range(steps), tokens, fontsize=8)
    bottom.set_xlim(-0.5, frames - 0.5)
    caption(fig, title)
    return fig
