"""Datasets of images held in memory, returning ``(image, target)`` pairs through a v2 transform."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.utils.data import Dataset
from torchvision import tv_tensors


class ImageTensors(Dataset):
    """Images in one tensor, with a class label or a mask per image.

    Args:
        images: (N, C, H, W), uint8 (0..255) or float in [0, 1].
        targets: (N,) class indices, or (N, H, W) masks (uint8 or long; 255 = ignore).
        transform: applied jointly to ``(tv_tensors.Image, target)``, a mask as ``tv_tensors.Mask``;
            it ends with plain tensors (see :func:`transforms.normalised`).

    Items: image float (C, H', W'), target long () or (H', W').
    """

    def __init__(self, images: Tensor, targets: Tensor, transform: Callable) -> None:
        if images.ndim != 4 or targets.shape[0] != images.shape[0] or targets.ndim not in (1, 3):
            raise ValueError(
                f"ImageTensors: images must be (N, C, H, W) and targets (N,) or (N, H, W), "
                f"got {tuple(images.shape)} and {tuple(targets.shape)}"
            )
        self.images, self.targets, self.transform = images, targets, transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        target = self.targets[i]
        image, target = self.transform(
            tv_tensors.Image(self.images[i]), tv_tensors.Mask(target) if target.ndim else target
        )
        return image, torch.as_tensor(target).long()
