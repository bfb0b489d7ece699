"""Vision data: embedded digits and digit scenes (no download), CIFAR-10 and MNIST, image folders,
and segmentation folders (CamVid, Pascal VOC, Cityscapes).

Every module is a ``framework.data.SplitDataModule`` whose batches are ``(image, target)``:
image float (B, C, H, W) normalised; target long (B,) for classification, (B, H, W) for
segmentation with 255 = ignore. Right after construction each has ``num_classes``,
``in_channels``, ``class_names``, ``mean`` and ``std``; segmentation modules also ``ignore_index``
and ``palette`` ((num_classes, 3) uint8 colours for drawing masks).
"""

from .digits import Digits, load_digit_images, stratified_split
from .folders import SegmentationFiles, SegmentationFolders
from .image_folder import ImageFolderClassification
from .layouts import LAYOUTS, Layout
from .scenes import DigitScenes, Scenes
from .torchvision_sets import TorchvisionClassification, read_idx
from .transforms import IGNORE_INDEX, PadTo, RandomScale, segmentation_transform

__all__ = [
    "IGNORE_INDEX",
    "LAYOUTS",
    "DigitScenes",
    "Digits",
    "ImageFolderClassification",
    "Layout",
    "PadTo",
    "RandomScale",
    "Scenes",
    "SegmentationFiles",
    "SegmentationFolders",
    "TorchvisionClassification",
    "load_digit_images",
    "read_idx",
    "segmentation_transform",
    "stratified_split",
]
