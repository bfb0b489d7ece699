"""Photos sorted into one sub-folder per class (torchvision's ImageFolder), for classification."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from PIL import Image
from torchvision.datasets import ImageFolder

from framework.data import DataError, SplitDataModule, dataset_dir, image_header, read_image
from framework.values import AnyReal, NonNegativeInt, PositiveFloat, PositiveInt

from .transforms import IMAGENET_MEAN, IMAGENET_STD, check_normalisation, check_scale_range, photo_transform


def load_rgb(path: str) -> Image.Image:
    """An image file as an RGB Pillow image; one that cannot be decoded is a ``DataError`` naming it."""
    return Image.fromarray(read_image(Path(path), "RGB"))


class ImageFolderClassification(SplitDataModule):
    """Images in ``<root>/<split>/<class>/<image>`` (jpg, png ...), split folders ``train`` and ``val``
    (and ``test``, else the test split reads ``val``); the classes are ``train``'s sub-folders, sorted.
    Every image's header is read at set-up, so that a file that is no image stops the run before training.

    Training: RandomResizedCrop to ``image_size`` and horizontal flips; evaluation: resize to
    ``image_size * 8 / 7`` and centre crop (see :func:`transforms.photo_transform`).

    Args:
        root: the folder, instead of ``$FRAMEWORK_DATA_DIR/<folder>``.
        folder: its name under ``$FRAMEWORK_DATA_DIR``.
        image_size: side of the square images the model sees.
        scale_range: area fraction range of the random crops.
        mean, std: normalisation (default ImageNet's).
        batch_size, eval_batch_size, num_workers: of the loaders.

    Batches: image (B, 3, image_size, image_size) float, target (B,) long.
    """

    def __init__(
        self,
        root: Optional[str] = None,
        folder: str = "ImageFolder",
        image_size: PositiveInt = 224,
        scale_range: Sequence[PositiveFloat] = (0.08, 1.0),
        mean: Sequence[AnyReal] = IMAGENET_MEAN,
        std: Sequence[PositiveFloat] = IMAGENET_STD,
        batch_size: PositiveInt = 32,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        check_scale_range(scale_range)
        check_normalisation(mean, std, 3)
        self.save_hyperparameters()
        self.root = dataset_dir(
            folder, root=root, source="your own images, one sub-folder per class", expect=("train", "val")
        )
        self.class_names = sorted(entry.name for entry in (self.root / "train").iterdir() if entry.is_dir())
        if not self.class_names:
            raise ValueError(f"{self.root / 'train'} has no class sub-folders; expected <class>/<image> inside")
        self.num_classes, self.in_channels = len(self.class_names), 3
        self.mean, self.std = tuple(mean), tuple(std)

    def make_splits(self) -> dict[str, ImageFolder]:
        h = self.hparams
        splits = {}
        for split in ("train", "val", "test"):
            folder = self.root / (split if (self.root / split).is_dir() else "val")
            try:
                dataset = ImageFolder(
                    str(folder),
                    photo_transform(split == "train", self.mean, self.std, h.image_size, h.scale_range),
                    loader=load_rgb,
                )
            except FileNotFoundError as error:  # a class folder without images
                raise DataError(f"{folder}: {error}") from None
            if dataset.classes != self.class_names:
                raise DataError(f"{folder} has the classes {dataset.classes}, but train has {self.class_names}")
            for path, _ in dataset.samples:
                image_header(Path(path))
            splits[split], self.sources[split] = dataset, str(folder)
        return splits
