"""CIFAR-10 and MNIST in torchvision's folder layout, downloaded only when asked (``data.download``)."""

from __future__ import annotations

import gzip
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

import numpy as np
import torch
from torch import Tensor

from framework.data import (
    DataError,
    DataNotFoundError,
    DataSet,
    Field,
    Format,
    Rows,
    SplitDataModule,
    data_root,
    dataset_dir,
    not_empty,
    reading,
)
from framework.values import AnyReal, NonNegativeInt, PositiveFloat, PositiveInt, Seed, declare

from .datasets import ImageTensors
from .digits import DIGIT_NAMES, stratified_split
from .transforms import check_normalisation, classification_transform


@dataclass(frozen=True)
class ImageSet:
    """What a torchvision data set is: where its files sit under the root, its classes and defaults."""

    folder: str
    source: str
    class_names: tuple[str, ...]
    in_channels: int
    size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    crop_padding: int  # training augmentation defaults: pixels padded before a random crop ...
    flip: bool  # ... and random horizontal flips


IMAGE_SETS = {
    "cifar10": ImageSet(
        "cifar-10-batches-py",
        "https://www.cs.toronto.edu/~kriz/cifar.html (cifar-10-python.tar.gz)",
        ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"),
        3,
        32,
        (0.4914, 0.4822, 0.4465),
        (0.2470, 0.2435, 0.2616),
        crop_padding=4,
        flip=True,
    ),
    "mnist": ImageSet(
        "MNIST/raw",
        "http://yann.lecun.com/exdb/mnist/ (the four *-ubyte.gz files)",
        tuple(DIGIT_NAMES),
        1,
        28,
        (0.1307,),
        (0.3081,),
        crop_padding=0,
        flip=False,
    ),
}
#: A data set's name (``data.name``): the keys of :data:`IMAGE_SETS`.
ImageSetName = Literal["cifar10", "mnist"]
#: The validation examples held out of the official training split: ten at least.
ValidationSize = declare("ValidationSize", int, "an int >= 10 (validation examples)", low=10)
MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
#: MNIST's invariants beyond the IDX format: a digit 0-9 per label, a label per image.
MNIST = DataSet(
    "MNIST",
    {"images": Format("MNIST images"), "labels": Format("MNIST labels", (Field("digit", 0, len(DIGIT_NAMES) - 1),))},
    paired=(("images", "labels"),),
)


def read_idx(path: Path) -> Tensor:
    """An IDX file of unsigned bytes (MNIST's format; gzip-compressed if the name ends in ``.gz``):
    bytes 0, 0, 0x08, ndim, then ndim big-endian uint32 sizes, then the data. Returns uint8 of those sizes."""
    with reading(not_empty(path, "an IDX file"), "an IDX file"):
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    if raw[:3] != b"\x00\x00\x08" or len(raw) < 4 + 4 * raw[3]:
        raise DataError(f"{path}: not an IDX file of unsigned bytes (magic {raw[:4].hex()})")
    ndim = raw[3]
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if data.size != math.prod(shape):
        raise DataError(f"{path}: header says {shape} = {math.prod(shape)} values, the file holds {data.size}")
    return torch.from_numpy(data.reshape(shape).copy())


def read_mnist(raw: Path, part: str) -> tuple[Tensor, Tensor]:
    """MNIST's ``train`` or ``test`` (t10k) part from ``MNIST/raw``, gzipped or not:
    images (N, 1, 28, 28) uint8, labels (N,) long."""
    paths = [raw / name if (raw / name).is_file() else raw / f"{name}.gz" for name in MNIST_FILES[part]]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        hint = " (data.test_split_only: true uses only the t10k files)" if part == "train" else ""
        raise DataNotFoundError(
            f"{raw} is missing {', '.join(missing)}{hint}. Get MNIST from {IMAGE_SETS['mnist'].source}, "
            f"or set data.download: true"
        )
    images, labels = (read_idx(p) for p in paths)
    size = IMAGE_SETS["mnist"].size
    if images.shape[1:] != (size, size):
        raise DataError(f"{paths[0]} holds images of {tuple(images.shape[1:])} pixels; MNIST's are {size} x {size}")
    if labels.ndim != 1:
        raise DataError(f"{paths[1]} holds labels of shape {tuple(labels.shape)}: expected one label per image")
    rows = {
        "images": Rows(paths[0], count=len(images)),
        "labels": MNIST.files["labels"].array(paths[1], labels[:, None]),
    }
    MNIST.check(rows)
    return images[:, None], labels.long()


class TorchvisionClassification(SplitDataModule):
    """CIFAR-10 or MNIST from a folder in torchvision's layout, for classification.

    ``root`` (default ``$FRAMEWORK_DATA_DIR``) is the folder torchvision is given: it holds
    ``cifar-10-batches-py/`` or ``MNIST/raw/``. Nothing is downloaded unless ``download`` is true
    (torchvision's downloader, into ``root``). MNIST is read from its IDX files directly (gzipped
    or not), so a folder with only the t10k files works with ``test_split_only``.

    Splits: ``val_size`` examples of the official training split (stratified) for validation,
    the rest for training, and the official test split. With ``test_split_only`` the official
    test split alone is divided, stratified, 80 / 10 / 10 into train / val / test.

    Args:
        name: ``cifar10`` or ``mnist``.
        root: the folder that holds the data set's folder.
        download: download the data set into ``root`` if it is not there.
        val_size: validation examples taken out of the training split.
        test_split_only: use only the official test split (see above).
        crop_padding, flip: training augmentation (random crop after zero padding, horizontal
            flips); default 4 and true for CIFAR-10, 0 and false for MNIST.
        seed: the seed of the splits.
        mean, std: normalisation (default the data set's statistics).
        batch_size, eval_batch_size, num_workers: of the loaders.

    Batches: image (B, C, H, W) float (3 x 32 x 32 or 1 x 28 x 28), target (B,) long.
    """

    def __init__(
        self,
        name: ImageSetName = "cifar10",
        root: Optional[str] = None,
        download: bool = False,
        val_size: ValidationSize = 5000,
        test_split_only: bool = False,
        crop_padding: Optional[NonNegativeInt] = None,
        flip: Optional[bool] = None,
        seed: Seed = 0,
        mean: Optional[Sequence[AnyReal]] = None,
        std: Optional[Sequence[PositiveFloat]] = None,
        batch_size: PositiveInt = 128,
        eval_batch_size: Optional[PositiveInt] = None,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, eval_batch_size, num_workers)
        self.save_hyperparameters()
        self.image_set = spec = IMAGE_SETS[name]
        self.mean, self.std = tuple(mean or spec.mean), tuple(std or spec.std)
        check_normalisation(self.mean, self.std, spec.in_channels)
        self.num_classes, self.in_channels = len(spec.class_names), spec.in_channels
        self.class_names = list(spec.class_names)
        self.base = Path(root) if root is not None else data_root()
        if not download:
            self.folder()

    def folder(self) -> Path:
        """The data set's folder, checked to exist (DataNotFoundError naming where to put it)."""
        spec, root = self.image_set, self.hparams.root
        try:
            return dataset_dir(spec.folder, root=None if root is None else Path(root) / spec.folder, source=spec.source)
        except DataNotFoundError as error:
            raise DataNotFoundError(f"{error} Or set data.download: true to have torchvision download it.") from None

    def prepare_data(self) -> None:
        if self.hparams.download:
            from torchvision import datasets

            make = {"cifar10": datasets.CIFAR10, "mnist": datasets.MNIST}[self.hparams.name]
            for train in (True, False):
                make(str(self.base), train=train, download=True)

    def read(self, part: str) -> tuple[Tensor, Tensor]:
        """The official ``train`` or ``test`` part: images (N, C, H, W) uint8, labels (N,) long."""
        if self.hparams.name == "mnist":
            return read_mnist(self.folder(), part)
        from torchvision.datasets import CIFAR10

        folder = self.folder()
        with reading(folder, "CIFAR-10's python batches", errors=(Exception,)):  # torchvision unpickles them
            cifar = CIFAR10(str(folder.parent), train=part == "train")
        return torch.from_numpy(cifar.data).permute(0, 3, 1, 2).contiguous(), torch.tensor(cifar.targets)

    def make_splits(self) -> dict[str, ImageTensors]:
        h, spec = self.hparams, self.image_set
        self.sources = dict.fromkeys(("train", "val", "test"), str(self.folder()))
        if h.test_split_only:
            images, labels = self.read("test")
            train, val, test = stratified_split(labels, [len(labels) // 10, len(labels) // 10], h.seed)
            parts = {"train": (images, labels, train), "val": (images, labels, val), "test": (images, labels, test)}
        else:
            images, labels = self.read("train")
            train, val = stratified_split(labels, [h.val_size], h.seed)
            test_images, test_labels = self.read("test")
            parts = {
                "train": (images, labels, train),
                "val": (images, labels, val),
                "test": (test_images, test_labels, torch.arange(len(test_labels))),
            }
        padding = spec.crop_padding if h.crop_padding is None else h.crop_padding
        flip = spec.flip if h.flip is None else h.flip
        return {
            split: ImageTensors(
                images[index],
                labels[index],
                classification_transform(
                    split == "train", self.mean, self.std, spec.size, crop_padding=padding, flip=flip
                ),
            )
            for split, (images, labels, index) in parts.items()
        }
