"""Pictures of segmentation and classification (matplotlib figures of :mod:`framework.pictures`):
predicted masks beside the truth, where one pixel looks, and where a Vision Transformer's
[CLS] token looks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from torch import Tensor, nn

from framework.attention import Record
from framework.pictures import (
    array,
    caption,
    colour_bar,
    figure,
    image_panel,
    overlay,
    padding_legend,
    picture,
    weight_map,
)


@picture
def masks(
    image: Tensor,
    truth: Tensor,
    prediction: Tensor,
    colours: Tensor,
    names: Sequence[str],
    ignore_index: int,
    title: str = "",
) -> Any:
    """The image, the true and the predicted (H, W) label maps side by side, in the classes'
    ``colours`` ((K, 3) uint8) with a colour bar naming the K classes (``names``); pixels of
    ``ignore_index`` hatched."""
    from matplotlib.colors import ListedColormap

    classes = len(colours)
    palette = ListedColormap(array(colours) / 255.0)
    height, width = truth.shape[-2:]
    fig = figure(13.0, 4.0 * height / width + 1.0)
    axes = fig.subplots(1, 3)
    image_panel(axes[0], image, "image")
    for ax, labels, name in ((axes[1], truth, "true classes"), (axes[2], prediction, "predicted classes")):
        shown = weight_map(
            ax,
            labels,
            rows="row (pixels)",
            columns="column (pixels)",
            valid=labels.cpu() != ignore_index,
            low=-0.5,
            high=classes - 0.5,
            bar=None,
            cmap=palette,
            aspect="equal",
            title=name,
        )
    bar = colour_bar(axes[2], shown, "class")
    bar.set_ticks(range(classes), labels=list(names), fontsize=8 if classes <= 24 else 6)
    if (truth == ignore_index).any() or (prediction == ignore_index).any():
        padding_legend(fig, f"ignored pixels (label {ignore_index})")
    caption(fig, title)
    return fig


def pixel_attention(
    block: nn.Module, record: Record, images: Tensor, pixel: tuple[float, float], title: str = ""
) -> Optional[list[Any]]:
    """Where the feature pixel at relative position ``pixel`` (row, column in [0, 1]) looks, drawn
    beside each image with the pixel marked; None when the record relates no pixels.

    The record says its query grid (the feature map's h x w); the block says where one of
    its queries looks (:meth:`~framework.attention.AttentionBlock.looks`: criss-cross draws a
    row and a column, non-local and DANet position every key pixel).
    """
    if record.queries is None or len(record.queries) != 2:
        return None
    i, j = (min(int(f * n), n - 1) for f, n in zip(pixel, record.queries))
    weights = block.looks(record, (i, j))
    if weights is None or weights.dim() != 3:
        return None
    height, width = images.shape[-2:]
    point = (min(int(pixel[0] * height), height - 1), min(int(pixel[1] * width), width - 1))
    where = f"{title}({block.block_name}), query: feature pixel ({i}, {j}) of {record.queries[0]} x {record.queries[1]}"
    return [
        overlay(x, w, point, caption_text=f"{where}, example {k + 1}") for k, (x, w) in enumerate(zip(images, weights))
    ]


def looked_at(
    model: nn.Module, maps: Mapping[str, list[Record]], images: Tensor, pixel: tuple[float, float]
) -> dict[str, list[Any]]:
    """``pixel_attention/<block>``: :func:`pixel_attention` for the last record of every captured
    block of ``model`` whose weights relate pixels (``maps``: a capture of ``model`` on ``images``)."""
    modules, pictures = dict(model.named_modules()), {}
    for name, records in maps.items():
        drawn = pixel_attention(modules[name], records[-1], images, pixel, title=f"{name} ")
        if drawn:
            pictures[f"pixel_attention/{name}"] = drawn
    return pictures


def token_attention(images: Tensor, weights: Tensor) -> list[Any]:
    """Each image beside its (h, w) ``weights`` over the image's patches, stretched to its size:
    where a token that is no pixel (a ViT's [CLS], by attention rollout) looks."""
    return [
        overlay(x, w, keys="patches", caption_text=f"attention rollout: where [CLS] looks, example {k + 1}")
        for k, (x, w) in enumerate(zip(images, weights))
    ]
