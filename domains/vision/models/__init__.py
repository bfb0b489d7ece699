"""Vision models: classifiers with attention in every stage, and segmentation networks."""

from .resnet import GLOBAL_BLOCKS, AttentionResNet, create_resnet
from .segmentation import AttentionHead, SegmentationNet, SegmentationOutput

__all__ = ["GLOBAL_BLOCKS", "AttentionHead", "AttentionResNet", "SegmentationNet", "SegmentationOutput", "create_resnet"]
