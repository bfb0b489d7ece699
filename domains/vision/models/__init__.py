"""Vision models: classifiers with attention in every stage, a Vision Transformer, and segmentation networks."""

from .resnet import AttentionResNet, create_resnet
from .segmentation import AttentionHead, SegmentationNet, SegmentationOutput
from .vit import ViTClassifier, attention_rollout

__all__ = [
    "AttentionHead",
    "AttentionResNet",
    "SegmentationNet",
    "SegmentationOutput",
    "ViTClassifier",
    "attention_rollout",
    "create_resnet",
]
