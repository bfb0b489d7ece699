"""Vision: attention in image classifiers and segmentation networks.

* Models: a timm ResNet with a feature-map block in every residual block or after every stage
  (:class:`AttentionResNet`), a small Vision Transformer (:class:`ViTClassifier`), and a dilated
  ResNet with an attention head for segmentation (:class:`SegmentationNet`: CCNet, DANet,
  non-local or FCN by its ``attention``).
* Tasks: :class:`Segmentation` (per-pixel cross-entropy with an auxiliary loss, mIoU, pixel
  accuracy, masks and pixel attention drawn); :class:`ImageClassification` (classification with
  pixel attention and a ViT's attention rollout drawn).
* Data: scikit-learn's digits (:class:`Digits`) and generated digit scenes
  (:class:`DigitScenes`), both embedded; CIFAR-10 and MNIST (:class:`TorchvisionClassification`),
  image folders (:class:`ImageFolderClassification`) and segmentation folders in the CamVid,
  Pascal VOC or Cityscapes layout (:class:`SegmentationFolders`).
"""

from .data import Digits, DigitScenes, ImageFolderClassification, SegmentationFolders, TorchvisionClassification
from .models import AttentionHead, AttentionResNet, SegmentationNet, SegmentationOutput, ViTClassifier
from .task import ImageClassification, Segmentation

__all__ = [
    "AttentionHead",
    "AttentionResNet",
    "DigitScenes",
    "Digits",
    "ImageFolderClassification",
    "ImageClassification",
    "Segmentation",
    "SegmentationFolders",
    "SegmentationNet",
    "SegmentationOutput",
    "TorchvisionClassification",
    "ViTClassifier",
]
