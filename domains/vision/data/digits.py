"""scikit-learn's handwritten digits (1797 images of 8x8, shipped with scikit-learn): the embedded
classification data set, and the glyphs of the digit scenes."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from framework.data import SplitDataModule
from framework.errors import ConfigError
from framework.values import AnyReal, NonNegativeInt, OpenFraction, PositiveFloat, PositiveInt, Seed, declare

from .datasets import ImageTensors
from .transforms import check_normalisation, classification_transform

DIGIT_NAMES = [str(d) for d in range(10)]
#: The side of the digit images a model sees: the digits' own 8 pixels at least.
DigitImageSize = declare("DigitImageSize", int, "an int >= 8 (the digits' own size)", low=8)


@lru_cache(maxsize=1)
def load_digit_images() -> tuple[Tensor, Tensor]:
    """The digits: images (1797, 8, 8) float in [0, 1] (ink = 1; the originals count 0..16) and labels (1797,)."""
    from sklearn.datasets import load_digits  # imported here: scikit-learn takes a second to import

    digits = load_digits()
    return torch.from_numpy(digits.images).float() / 16, torch.from_numpy(digits.target).long()


def stratified_split(labels: Tensor, sizes: Sequence[int], seed: int) -> list[Tensor]:
    """Disjoint random index sets ``[rest, part_1, part_2, ...]``, ``part_i`` with ``sizes[i]`` indices,
    each keeping the class proportions of ``labels`` (scikit-learn's ``train_test_split``); sorted."""
    from sklearn.model_selection import train_test_split

    labels_np, rest, parts = labels.numpy(), np.arange(len(labels)), []
    for size in sizes:
        rest, part = train_test_split(rest, test_size=size, stratify=labels_np[rest], random_state=seed)
        parts.append(part)
    return [torch.from_numpy(np.sort(index)) for index in (rest, *parts)]


def split_sizes(total: int, val_fraction: float, test_fraction: float) -> tuple[int, int]:
    """Validation and test sizes of ``total`` examples, checked: the fractions' sum < 1 (each is in
    (0, 1), their declared domain)."""
    if val_fraction + test_fraction >= 1:
        raise ConfigError(
            f"data.val_fraction and data.test_fraction must have a sum < 1, got {val_fraction} and {test_fraction}"
        )
    return max(10, round(val_fraction * total)), max(10, round(test_fraction * total))


def digit_split_indices(val_fraction: float, test_fraction: float, seed: int) -> dict[str, Tensor]:
    """Indices of the digits in the train, val and test splits (disjoint, stratified)."""
    labels = load_digit_images()[1]
    train, val, test = stratified_split(labels, split_sizes(len(labels), val_fraction, test_fraction), seed)
    return {"train": train, "val": val, "test": test}


class Digits(SplitDataModule):
    """Handwritten digits (scikit-learn, no download) for classification: 10 classes, 1 channel.

    The 1797 images are split, stratified by class, into train / val / test (70 / 15 / 15 by
    default). ``image_size`` upscales them bilinearly (8 -> 32 gives a CNN of four stages room).
    Training may shift them by a random crop after zero padding; digits are never flipped.

    Args:
        image_size: side of the images the model sees (8 = the originals).
        val_fraction, test_fraction: shares of the validation and test splits.
        crop_padding: pixels of zero padding before a random crop back to ``image_size``, in
            training (0 = no augmentation).
        seed: the split's seed.
        mean, std: normalisation (defaults: the digits' pixel mean and std).
        batch_size, eval_batch_size, num_workers: of the loaders.

    Batches: image (B, 1, image_size, image_size) float, target (B,) long.
    """

    def __init__(
        self,
        image_size: DigitImageSize = 8,
        val_fraction: OpenFraction = 0.15,
        test_fraction: OpenFraction = 0.15,
        crop_padding: NonNegativeInt = 0,
        seed: Seed = 0,
        mean: Sequence[AnyReal] = (0.305,),
        std: Sequence[PositiveFloat] = (0.376,),
        batch_size: PositiveInt = 64,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        split_sizes(1797, val_fraction, test_fraction)
        check_normalisation(mean, std, 1)
        self.save_hyperparameters()
        self.num_classes, self.in_channels, self.class_names = 10, 1, list(DIGIT_NAMES)
        self.mean, self.std = tuple(mean), tuple(std)

    def make_splits(self) -> dict[str, ImageTensors]:
        h = self.hparams
        images, labels = load_digit_images()
        images = F.interpolate(images[:, None], size=(h.image_size, h.image_size), mode="bilinear", align_corners=False)
        images = images.clamp(0, 1)
        return {
            split: ImageTensors(
                images[index],
                labels[index],
                classification_transform(
                    split == "train", self.mean, self.std, h.image_size, crop_padding=h.crop_padding
                ),
            )
            for split, index in digit_split_indices(h.val_fraction, h.test_fraction, h.seed).items()
        }
