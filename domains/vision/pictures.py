"""Pictures for the loggers: colour masks beside the truth, and one pixel's attention map."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from framework.callbacks import heatmap

IGNORE_COLOUR = (128, 128, 128)


def colour_mask(mask: Tensor, colours: Tensor, ignore_index: int) -> Tensor:
    """(H, W) labels -> (H, W, 3) uint8; ignored pixels grey."""
    ignored = mask == ignore_index
    image = colours[mask.clamp(0, len(colours) - 1).where(~ignored, 0).cpu()]
    image[ignored.cpu()] = torch.tensor(IGNORE_COLOUR, dtype=torch.uint8)
    return image


def as_rgb(image: Tensor) -> Tensor:
    """(C, H, W) normalised image -> (H, W, 3) uint8, each image stretched to the full range."""
    image = image.detach().float().cpu()
    image = image.expand(3, -1, -1) if image.shape[0] == 1 else image[:3]
    low, high = image.amin(), image.amax()
    return ((image - low) / (high - low).clamp_min(1e-8) * 255).round().to(torch.uint8).permute(1, 2, 0)


def side_by_side(*images: Tensor, gap: int = 2) -> Tensor:
    """(H, W, 3) uint8 images of one height, left to right with white gaps."""
    height = images[0].shape[0]
    spacer = torch.full((height, gap, 3), 255, dtype=torch.uint8)
    parts = [part for image in images for part in (image, spacer)][:-1]
    return torch.cat(parts, dim=1)


def pixel_attention(block: nn.Module, record: object, i: int, j: int, size: tuple[int, int]) -> Optional[Tensor]:
    """(B, h, w) weights with which feature pixel (i, j) attends, from a captured record.

    Criss-cross records are drawn by the block's ``pixel_map`` (the pixel's row and column);
    records of all-pairs attention (non-local, DANet position: (B, hw, hw)) by the pixel's
    row. None for records of other shapes (channel attention, sub-sampled keys).
    """
    if hasattr(block, "pixel_map") and isinstance(record, Tensor):
        return block.pixel_map(record, i, j)
    records = record if isinstance(record, (tuple, list)) else (record,)
    h, w = size
    for weights in records:
        if isinstance(weights, Tensor) and weights.dim() == 3 and weights.shape[1:] == (h * w, h * w):
            return weights[:, i * w + j].unflatten(1, (h, w))
    return None


def attention_overlay(image: Tensor, weights: Tensor, pixel: tuple[int, int]) -> Tensor:
    """The image beside the (h, w) weights upsampled to its size, the query pixel marked white in both."""
    height, width = image.shape[:2]
    enlarged = F.interpolate(weights[None, None].float(), size=(height, width), mode="nearest")[0, 0]
    drawn = heatmap(enlarged, min_side=1)
    marked = [image.clone(), drawn]
    y, x = pixel
    for picture in marked:
        picture[max(y - 2, 0):y + 3, x] = 255
        picture[y, max(x - 2, 0):x + 3] = 255
    return side_by_side(*marked)
