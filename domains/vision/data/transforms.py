"""Joint image/mask transforms (torchvision.transforms.v2) for segmentation and classification.

Segmentation, training (the mmsegmentation / CCNet recipe)::

    RandomScale(scale_range) -> RandomCrop(crop_size, pad: image 0, mask ignore) -> h-flip -> float -> normalise

Segmentation, evaluation (deterministic): no crop and no random scale, so every labelled pixel
is scored (at the stored resolution, or after the fixed ``base_scale`` when one is set for CPU
runs); images only get padded (bottom and right: image 0, mask ignore) to ``pad_to`` when a data
set's images differ in size (VOC), so that they batch. Cropping would drop labelled pixels from
the metric and random choices would make it noisy; that is why neither is used.

Masks are ``tv_tensors.Mask``: v2 resizes them with nearest interpolation, and pads them with
the ignore index, so no interpolated or invented labels reach the loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional

import torch
from torchvision import tv_tensors
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

from framework.errors import ConfigError

IGNORE_INDEX = 255
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def check_scale_range(scale_range: Sequence[float], key: str = "data.scale_range") -> tuple[float, float]:
    """``(low, high)`` with ``0 < low <= high``; otherwise an error naming ``key``."""
    low, high = (float(s) for s in scale_range)
    if not 0 < low <= high:
        raise ConfigError(f"{key} must be (low, high) with 0 < low <= high, got {tuple(scale_range)}")
    return low, high


def check_normalisation(mean: Sequence[float], std: Sequence[float], channels: int) -> None:
    """``data.mean`` and ``data.std`` hold one value per channel (that every std is positive is
    their declared domain: ``Sequence[PositiveFloat]``, checked by the config parser)."""
    if len(mean) != channels or len(std) != channels:
        raise ConfigError(f"data.mean and data.std need {channels} values each, got {list(mean)} and {list(std)}")


class RandomScale(v2.Transform):
    """Resizes image and mask by one random factor ``s ~ U(low, high)`` (aspect ratio kept).

    Images are resized bilinearly (antialiased), masks with nearest interpolation (v2's mask kernel).
    """

    def __init__(self, scale_range: Sequence[float]) -> None:
        super().__init__()
        self.low, self.high = check_scale_range(scale_range)

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        height, width = v2.query_size(flat_inputs)
        scale = self.low + (self.high - self.low) * torch.rand(()).item()
        return {"size": [max(1, round(height * scale)), max(1, round(width * scale))]}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.resize(inpt, size=params["size"], antialias=True)


class PadTo(v2.Transform):
    """Pads image and mask at the bottom and right to ``size`` (image 0, mask ``ignore_index``).

    Deterministic; an image larger than ``size`` is an error naming ``key``.
    """

    def __init__(self, size: Sequence[int], ignore_index: int = IGNORE_INDEX, key: str = "data.pad_to") -> None:
        super().__init__()
        self.size, self.ignore_index, self.key = (int(size[0]), int(size[1])), ignore_index, key

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        height, width = v2.query_size(flat_inputs)
        if height > self.size[0] or width > self.size[1]:
            raise ConfigError(f"{self.key} = {list(self.size)} is smaller than an image of {height}x{width} (H x W)")
        return {"padding": [0, 0, self.size[1] - width, self.size[0] - height]}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        fill = self.ignore_index if isinstance(inpt, tv_tensors.Mask) else 0
        return F.pad(inpt, padding=params["padding"], fill=fill)


def normalised(mean: Sequence[float], std: Sequence[float]) -> list[v2.Transform]:
    """The last steps of every transform: float in [0, 1], ``(x - mean) / std`` per channel, plain tensors."""
    return [v2.ToDtype(torch.float32, scale=True), v2.Normalize(list(mean), list(std)), v2.ToPureTensor()]


def segmentation_transform(
    train: bool,
    mean: Sequence[float],
    std: Sequence[float],
    crop_size: Sequence[int],
    scale_range: Sequence[float] = (0.5, 2.0),
    flip: bool = True,
    base_scale: float = 1.0,
    pad_to: Optional[Sequence[int]] = None,
    ignore_index: int = IGNORE_INDEX,
) -> v2.Compose:
    """The joint transform of a segmentation split, for (``tv_tensors.Image`` uint8, ``tv_tensors.Mask``).

    Args:
        train: random scale, crop and flip (training) or the deterministic evaluation transform.
        mean, std: per-channel normalisation of images scaled to [0, 1].
        crop_size: (H, W) of training crops; smaller images are padded first (mask: ignore).
        scale_range: the random scale factor's range.
        flip: random horizontal flips (p = 0.5) in training.
        base_scale: a fixed factor every split is resized by first (0.5 halves CamVid to 240x180 for
            CPU runs; evaluation then scores the resized masks); crops and ``pad_to`` are after it.
        pad_to: (H, W) that evaluation images are padded to, or None to keep their size.
        ignore_index: the mask value of padded pixels.
    """
    low, high = check_scale_range(scale_range)
    if not train:
        rescale = [RandomScale((base_scale, base_scale))] if base_scale != 1 else []  # a fixed factor
        return v2.Compose(rescale + ([PadTo(pad_to, ignore_index)] if pad_to else []) + normalised(mean, std))
    crop = v2.RandomCrop(list(crop_size), pad_if_needed=True, fill={tv_tensors.Image: 0, tv_tensors.Mask: ignore_index})
    flips = [v2.RandomHorizontalFlip()] if flip else []
    return v2.Compose([RandomScale((low * base_scale, high * base_scale)), crop, *flips, *normalised(mean, std)])


def classification_transform(
    train: bool, mean: Sequence[float], std: Sequence[float], size: int, crop_padding: int = 0, flip: bool = False
) -> v2.Compose:
    """The transform of a classification split of same-size images (digits, MNIST, CIFAR-10).

    Training: a random ``size`` crop after ``crop_padding`` zero pixels on each side (CIFAR's
    recipe; 0 turns it off) and optional horizontal flips. Evaluation: normalisation only.
    """
    steps: list[Callable] = []
    if train and crop_padding:
        steps.append(v2.RandomCrop(size, padding=crop_padding))
    if train and flip:
        steps.append(v2.RandomHorizontalFlip())
    return v2.Compose(steps + normalised(mean, std))


def photo_transform(
    train: bool,
    mean: Sequence[float],
    std: Sequence[float],
    image_size: int,
    scale_range: Sequence[float] = (0.08, 1.0),
) -> v2.Compose:
    """The transform of a classification split of photos of any size (an image folder).

    Training: RandomResizedCrop to ``image_size`` (area fraction in ``scale_range``) and a random
    horizontal flip. Evaluation: the shorter side resized to ``image_size * 8 / 7`` and a centre
    crop of ``image_size`` (the ImageNet policy, 256 -> 224). Both normalise.
    """
    if train:
        steps = [
            v2.RandomResizedCrop(image_size, scale=check_scale_range(scale_range), antialias=True),
            v2.RandomHorizontalFlip(),
        ]
    else:
        steps = [v2.Resize(round(image_size * 8 / 7), antialias=True), v2.CenterCrop(image_size)]
    return v2.Compose([v2.ToImage(), *steps, *normalised(mean, std)])
