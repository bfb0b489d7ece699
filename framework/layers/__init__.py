"""Model pieces that several domains share: positional encodings, a Transformer-style encoder
over any sequence block, and a small CNN with a feature-map block per stage."""

from .convnet import AttentiveConvNet, ConvStage
from .encoder import AttentionEncoder, EncoderLayer
from .positions import PositionalEncoding

__all__ = ["AttentionEncoder", "AttentiveConvNet", "ConvStage", "EncoderLayer", "PositionalEncoding"]
