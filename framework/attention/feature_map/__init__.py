"""Attention blocks for (B, C, H, W) feature maps; every one returns a map of the same shape.

Channel gates (``se``, ``eca``), a spatial gate (``spatial``), both (``cbam``), self-attention
over positions (``non_local``, ``sagan``, ``danet_position``, ``criss_cross``, ``axial``, and the
local windows of ``stand_alone``) or channels (``danet_channel``), their sum (``danet``) and
global-context pooling (``gc``). Importing the package registers them all.
"""

from . import axial, cbam, criss_cross, danet, eca, gc, non_local, sagan, se, spatial, stand_alone  # noqa: F401  (register the blocks)
from .axial import AxialAttention
from .cbam import CBAM
from .criss_cross import CrissCrossAttention
from .danet import ChannelAttention, DualAttention, PositionAttention
from .eca import EfficientChannelAttention, eca_kernel_size
from .gc import GlobalContext
from .non_local import NonLocal
from .sagan import SelfAttentionGAN
from .se import SqueezeExcite, bottleneck_width
from .spatial import SpatialAttention
from .stand_alone import StandAloneSelfAttention

__all__ = [
    "AxialAttention",
    "CBAM",
    "ChannelAttention",
    "CrissCrossAttention",
    "DualAttention",
    "EfficientChannelAttention",
    "GlobalContext",
    "NonLocal",
    "PositionAttention",
    "SelfAttentionGAN",
    "SpatialAttention",
    "SqueezeExcite",
    "StandAloneSelfAttention",
    "bottleneck_width",
    "eca_kernel_size",
]
