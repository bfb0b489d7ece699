"""The drawing kit: heat maps, overlays, strips and panels for the loggers.

Every function takes tensors on any device and returns an (H, W, 3) ``uint8`` image on
the CPU: inputs are moved to the CPU on entry (:func:`cpu`), so a picture drawn from a
model's outputs on a GPU never meets a CPU colour table on the wrong device. The
domains' ``pictures.py`` modules compose these pieces; the ``attention_maps`` callback
logs what they draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

#: Anchor colours of a perceptually ordered map (dark blue -> teal -> yellow).
ANCHORS = torch.tensor(
    [[0.27, 0.00, 0.33], [0.23, 0.32, 0.55], [0.13, 0.57, 0.55], [0.37, 0.79, 0.38], [0.99, 0.91, 0.14]]
)
WHITE = (255, 255, 255)
GREY = (128, 128, 128)


def cpu(x: Tensor) -> Tensor:
    """``x`` detached, on the CPU (a no-op for CPU tensors)."""
    return x.detach().cpu()


def colour(rgb: Sequence[int]) -> Tensor:
    """(3,) uint8 colour."""
    return torch.tensor(list(rgb), dtype=torch.uint8)


def colours_of(values: Tensor) -> Tensor:
    """Values in [0, 1] (any shape) -> their colours on the map, (..., 3) float in [0, 1]."""
    position = cpu(values).float().clamp(0, 1) * (len(ANCHORS) - 1)
    lower = position.floor().long().clamp(max=len(ANCHORS) - 2)
    frac = (position - lower).unsqueeze(-1)
    return ANCHORS[lower] * (1 - frac) + ANCHORS[lower + 1] * frac


def enlarge(image: Tensor, factor: int) -> Tensor:
    """(H, W, ...) -> (H * factor, W * factor, ...) by repeating whole pixels."""
    return image.repeat_interleave(factor, 0).repeat_interleave(factor, 1)


def heatmap(values: Tensor, min_side: int = 128) -> Tensor:
    """(H, W) values -> (H', W', 3) uint8, scaled to [0, 1] (min to max) and enlarged by whole
    pixels until the shorter side has at least ``min_side`` pixels."""
    values = cpu(values).float()
    low, high = values.min(), values.max()
    scaled = (values - low) / (high - low) if high > low else torch.zeros_like(values)
    factor = max(1, -(-min_side // min(values.shape)))
    return enlarge((colours_of(scaled) * 255).round().to(torch.uint8), factor)


def side_by_side(*images: Tensor, gap: int = 2) -> Tensor:
    """(H, W_i, 3) images left to right with white gaps; shorter ones padded white at the bottom."""
    height = max(image.shape[0] for image in images)
    parts = []
    for image in images:
        image = cpu(image)
        if image.shape[0] < height:
            image = torch.cat([image, torch.full((height - image.shape[0], image.shape[1], 3), 255, dtype=torch.uint8)])
        parts += [image, torch.full((height, gap, 3), 255, dtype=torch.uint8)]
    return torch.cat(parts[:-1], dim=1)


def stacked(*images: Tensor, gap: int = 2) -> Tensor:
    """(H_i, W, 3) images top to bottom with white gaps; narrower ones padded white on the right."""
    width = max(image.shape[1] for image in images)
    parts = []
    for image in images:
        image = cpu(image)
        if image.shape[1] < width:
            image = torch.cat([image, torch.full((image.shape[0], width - image.shape[1], 3), 255, dtype=torch.uint8)], 1)
        parts += [image, torch.full((gap, width, 3), 255, dtype=torch.uint8)]
    return torch.cat(parts[:-1], dim=0)


def as_rgb(image: Tensor) -> Tensor:
    """(C, H, W) normalised image -> (H, W, 3) uint8, stretched to the full range (grey for C = 1)."""
    image = cpu(image).float()
    image = image.expand(3, -1, -1) if image.shape[0] == 1 else image[:3]
    low, high = image.amin(), image.amax()
    return ((image - low) / (high - low).clamp_min(1e-8) * 255).round().to(torch.uint8).permute(1, 2, 0)


def colour_mask(mask: Tensor, colours: Tensor, ignore_index: int) -> Tensor:
    """(H, W) labels -> (H, W, 3) uint8 with ``colours`` (K, 3) uint8; ``ignore_index`` grey."""
    mask, colours = cpu(mask), cpu(colours)
    ignored = mask == ignore_index
    image = colours[mask.clamp(0, len(colours) - 1).where(~ignored, 0)]
    image[ignored] = colour(GREY)
    return image


def overlay(image: Tensor, weights: Tensor, point: Optional[tuple[int, int]] = None) -> Tensor:
    """The image beside the (h, w) ``weights`` upsampled to its size, ``point`` (row, column)
    marked with a white cross in both: where one query pixel looks (without ``point``: where a
    token that is no pixel, such as a ViT's [CLS], looks)."""
    image = cpu(image)
    height, width = image.shape[:2]
    enlarged = F.interpolate(cpu(weights)[None, None].float(), size=(height, width), mode="nearest")[0, 0]
    marked = [image.clone(), heatmap(enlarged, min_side=1)]
    if point is not None:
        y, x = point
        for picture in marked:
            picture[max(y - 2, 0):y + 3, x] = 255
            picture[y, max(x - 2, 0):x + 3] = 255
    return side_by_side(*marked)


def bars(values: Tensor, column_width: int, height: int, rgb: Sequence[int]) -> Tensor:
    """(N,) non-negative values -> (height, N * column_width, 3) uint8: one bar per value,
    as tall as the value relative to the largest, in ``rgb`` on black."""
    values = cpu(values).float()
    heights = (values / values.max().clamp(min=1e-12) * height).round().long()
    rows = torch.arange(height - 1, -1, -1).unsqueeze(1)  # height above the strip's bottom
    lit = (rows < heights.repeat_interleave(column_width).unsqueeze(0)).unsqueeze(-1)
    return torch.where(lit, colour(rgb), torch.zeros(3, dtype=torch.uint8))


def marks(flags: Tensor, column_width: int, height: int, rgb: Sequence[int]) -> Tensor:
    """(N,) booleans -> (height, N * column_width, 3) uint8: ``rgb`` under the true ones, white elsewhere."""
    strip = torch.where(cpu(flags).bool().view(1, -1, 1), colour(rgb), colour(WHITE))
    return strip.repeat_interleave(column_width, 1).expand(height, -1, -1).contiguous()
