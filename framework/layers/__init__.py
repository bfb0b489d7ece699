"""Model pieces that several domains share: positional encodings, a Transformer-style encoder
over any sequence block, a small CNN with a feature-map block per stage, and padding-aware
reductions (masked mean, packed recurrence), and dropout of sparse input features."""

from .convnet import AttentiveConvNet, ConvStage
from .dropout import feature_dropout
from .encoder import AttentionEncoder, EncoderLayer
from .masking import counted_mean, masked_mean, mean_over, run_packed
from .positions import PositionalEncoding

__all__ = [
    "AttentionEncoder",
    "AttentiveConvNet",
    "ConvStage",
    "EncoderLayer",
    "PositionalEncoding",
    "counted_mean",
    "feature_dropout",
    "masked_mean",
    "mean_over",
    "run_packed",
]
