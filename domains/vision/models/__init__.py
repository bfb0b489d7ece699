"""Vision models: classifiers with attention in every stage, and segmentation networks."""

from .resnet import AttentionResNet, create_resnet
from .segmentation import AttentionHead, SegmentationNet, SegmentationOutput

__all__ = ["AttentionHead", "AttentionResNet", "SegmentationNet", "SegmentationOutput", "create_resnet"]
