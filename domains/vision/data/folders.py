"""Semantic segmentation data sets read from their canonical folders (CamVid, Pascal VOC, Cityscapes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset
from torchvision import tv_tensors

from framework.data import SPLITS, DataError, SplitDataModule, check_label_values, dataset_dir, image_header, read_image
from framework.errors import ConfigError
from framework.values import AnyReal, NonNegativeInt, PositiveFloat, PositiveInt

from .layouts import LAYOUTS, Layout, LayoutName, Pairs
from .transforms import (
    IGNORE_INDEX,
    IMAGENET_MEAN,
    IMAGENET_STD,
    check_normalisation,
    check_scale_range,
    segmentation_transform,
)


def read_label_map(path: Path, lookup: Tensor, valid: Optional[np.ndarray] = None, meaning: str = "") -> Tensor:
    """A label PNG (mode L, or P: palette indices) as class indices (H, W) uint8, through ``lookup``
    (256,); a value not marked in ``valid`` (256,) bool, when given, is an error naming the file,
    the pixel and ``meaning``."""
    values = read_image(path, what="a label map")
    if values.ndim != 2 or values.dtype != np.uint8:
        raise DataError(
            f"{path}: a label map must be a single-channel 8-bit PNG, got shape {values.shape} {values.dtype}"
        )
    if valid is not None:
        check_label_values(values, valid, path, meaning)
    return lookup[torch.from_numpy(values.astype(np.int64))]


def check_pairs(pairs: Pairs, one_size: bool, pad_to: Optional[Sequence[int]] = None) -> None:
    """Every (image, label map) pair's headers (nothing is decoded): images Pillow can open, label
    maps single-channel 8-bit (mode L or P) of their image's size; with ``one_size`` every image
    the size of the first (an evaluation split without ``pad_to``, whose batches stack whole
    images), and every image within ``pad_to`` (H, W) when given. The first offence is a
    ``DataError`` naming the file."""
    first = None
    for image_path, label_path in pairs:
        image, label = image_header(image_path), image_header(label_path, "a label map")
        if label.mode not in ("L", "P"):
            raise DataError(
                f"{label_path}: a label map must be a single-channel 8-bit PNG (mode L or P), got mode {label.mode}"
            )
        if label[:2] != image[:2]:
            raise DataError(
                f"{label_path}: label map {label.width} x {label.height} differs from its image "
                f"{image_path}, {image.width} x {image.height}"
            )
        first = first or (image_path, image)
        if one_size and image[:2] != first[1][:2]:
            raise DataError(
                f"{image_path} is {image.width} x {image.height}, but {first[0].name} is {first[1].width} x "
                f"{first[1].height}: the images of an evaluation split must have one size, unless data.pad_to "
                "is set"
            )
        if pad_to is not None and (image.height > pad_to[0] or image.width > pad_to[1]):
            raise DataError(
                f"{image_path} is {image.width} x {image.height}, larger than data.pad_to {tuple(pad_to)} (H, W)"
            )


class SegmentationFiles(Dataset):
    """(image, label map) file pairs read on demand and transformed jointly; a label value the
    data set does not define (``valid``) is an error naming the file.

    Items: image float (3, H, W), target long (H, W) with ``IGNORE_INDEX`` for void pixels.
    """

    def __init__(
        self, pairs: Pairs, lookup: Tensor, transform: Callable, valid: Optional[np.ndarray] = None, meaning: str = ""
    ) -> None:
        self.pairs, self.lookup, self.transform, self.valid, self.meaning = pairs, lookup, transform, valid, meaning

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        image_path, label_path = self.pairs[i]
        pixels = torch.from_numpy(read_image(image_path, "RGB")).permute(2, 0, 1)
        labels = read_label_map(label_path, self.lookup, self.valid, self.meaning)
        if labels.shape != pixels.shape[1:]:
            raise DataError(
                f"{label_path}: label map {tuple(labels.shape)} differs from its image {tuple(pixels.shape[1:])}"
            )
        image, target = self.transform(tv_tensors.Image(pixels), tv_tensors.Mask(labels))
        return image, target.long()


class SegmentationFolders(SplitDataModule):
    """CamVid, Pascal VOC 2012 or Cityscapes, from ``$FRAMEWORK_DATA_DIR/<CamVid|VOCdevkit|cityscapes>``.

    Layouts (``layout``):

    * ``camvid``: SegNet's ``train/ trainannot/ val/ valannot/ test/ testannot/`` PNGs, 11 classes;
      label 11 (void) -> ignore.
    * ``voc``: ``VOCdevkit/VOC2012`` with ``JPEGImages``, ``SegmentationClass`` (palette PNGs) and
      ``ImageSets/Segmentation/{train,val}.txt``, 21 classes; 255 (borders) -> ignore; test = val.
    * ``cityscapes``: ``leftImg8bit/<split>/<city>/*_leftImg8bit.png`` and
      ``gtFine/<split>/<city>/*_gtFine_labelIds.png``; label ids -> the 19 train ids, all other
      ids -> ignore; test = val.

    Training: random scale in ``scale_range``, random ``crop_size`` crop (padded with the ignore
    index where the image is smaller), horizontal flip, normalisation. Evaluation: whole images,
    no rescaling (so metrics count every labelled pixel), padded to ``pad_to`` (bottom and right,
    ignore in the mask) when the layout's images differ in size (VOC: 512 x 512).

    Args:
        layout: ``camvid``, ``voc`` or ``cityscapes``.
        root: the data set's folder, instead of ``$FRAMEWORK_DATA_DIR/<folder>``.
        crop_size: (H, W) of the training crops.
        scale_range: range of the random training scale factor.
        base_scale: a fixed factor all splits are resized by first (0.5: CamVid at 240 x 180 for CPU
            runs; metrics are then computed at that resolution).
        flip: random horizontal flips in training.
        pad_to: (H, W) evaluation images are padded to; default the layout's (None for CamVid and
            Cityscapes, whose images all have one size).
        max_images: read at most this many pairs per split (the first by file name), for quick runs.
        mean, std: normalisation (default ImageNet's, as pretrained backbones expect).
        batch_size, eval_batch_size, num_workers: of the loaders.

    Batches: image (B, 3, H, W) float, target (B, H, W) long, 255 = ignore.
    """

    def __init__(
        self,
        layout: LayoutName = "camvid",
        root: Optional[str] = None,
        crop_size: Sequence[PositiveInt] = (256, 256),
        scale_range: Sequence[PositiveFloat] = (0.5, 2.0),
        base_scale: PositiveFloat = 1.0,
        flip: bool = True,
        pad_to: Optional[Sequence[PositiveInt]] = None,
        max_images: Optional[PositiveInt] = None,
        mean: Sequence[AnyReal] = IMAGENET_MEAN,
        std: Sequence[PositiveFloat] = IMAGENET_STD,
        batch_size: PositiveInt = 8,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        if len(crop_size) != 2:
            raise ConfigError(f"data.crop_size must be (H, W), got {crop_size}")
        check_scale_range(scale_range)
        check_normalisation(mean, std, 3)
        self.save_hyperparameters()
        self.layout: Layout = LAYOUTS[layout]
        self.root = dataset_dir(self.layout.folder, root=root, source=self.layout.source, expect=self.layout.expect)
        self.num_classes, self.in_channels, self.ignore_index = len(self.layout.class_names), 3, IGNORE_INDEX
        self.class_names, self.palette = list(self.layout.class_names), self.layout.palette.clone()
        self.mean, self.std = tuple(mean), tuple(std)

    def make_splits(self) -> dict[str, SegmentationFiles]:
        h, lookup = self.hparams, self.layout.lookup()
        pad_to = h.pad_to if h.pad_to is not None else self.layout.pad_to
        splits = {}
        for split in SPLITS:
            transform = segmentation_transform(
                split == "train",
                self.mean,
                self.std,
                h.crop_size,
                h.scale_range,
                h.flip,
                h.base_scale,
                pad_to=None if split == "train" else pad_to,
            )
            pairs = self.layout.find_pairs(self.root, split)[: h.max_images]
            check_pairs(
                pairs, one_size=split != "train" and pad_to is None, pad_to=None if split == "train" else pad_to
            )
            splits[split] = SegmentationFiles(
                pairs, lookup, transform, self.layout.valid_values(), self.layout.label_meaning
            )
            self.sources[split] = str(pairs[0][0].parent)
        return splits
