"""Pictures of segmentation and classification: predicted masks beside the truth, where one pixel
looks, and where a Vision Transformer's [CLS] token looks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from torch import Tensor, nn

from framework.attention import Record
from framework.pictures import as_rgb, colour_mask, overlay, side_by_side


def masks(image: Tensor, truth: Tensor, prediction: Tensor, colours: Tensor, ignore_index: int) -> Tensor:
    """The image, the true and the predicted label maps side by side (ignored pixels grey)."""
    return side_by_side(as_rgb(image), colour_mask(truth, colours, ignore_index),
                        colour_mask(prediction, colours, ignore_index))


def pixel_attention(block: nn.Module, record: Record, images: Tensor, pixel: tuple[float, float]) -> Optional[list[Tensor]]:
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
    return [overlay(as_rgb(x), w, point) for x, w in zip(images, weights)]


def looked_at(model: nn.Module, maps: Mapping[str, list[Record]], images: Tensor,
              pixel: tuple[float, float]) -> dict[str, list[Tensor]]:
    """``pixel_attention/<block>``: :func:`pixel_attention` for the last record of every captured
    block of ``model`` whose weights relate pixels (``maps``: a capture of ``model`` on ``images``)."""
    modules, pictures = dict(model.named_modules()), {}
    for name, records in maps.items():
        drawn = pixel_attention(modules[name], records[-1], images, pixel)
        if drawn:
            pictures[f"pixel_attention/{name}"] = drawn
    return pictures


def token_attention(images: Tensor, weights: Tensor) -> list[Tensor]:
    """Each image beside its (h, w) ``weights`` over the image's patches, upsampled to its size:
    where a token that is no pixel (a ViT's [CLS], by attention rollout) looks."""
    return [overlay(as_rgb(x), w) for x, w in zip(images, weights)]
