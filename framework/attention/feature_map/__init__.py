"""Attention blocks for (B, C, H, W) feature maps; every one returns a map of the same shape.

Channel gates (``se``, ``eca``), a spatial gate (``spatial``), both (``cbam``), self-attention
over positions (``non_local``, ``danet_position``, ``criss_cross``) or channels
(``danet_channel``), their sum (``danet``) and global-context pooling (``gc``). Importing the
package registers them all.
"""

from . import cbam, criss_cross, danet, eca, gc, non_local, se, spatial  # noqa: F401  (register the blocks)
from .cbam import CBAM
from .criss_cross import CrissCrossAttention
from .danet import ChannelAttention, DualAttention, PositionAttention
from .eca import EfficientChannelAttention, eca_kernel_size
from .gc import GlobalContext
from .non_local import NonLocal
from .se import SqueezeExcite, bottleneck_width
from .spatial import SpatialAttention

__all__ = [
    "CBAM",
    "ChannelAttention",
    "CrissCrossAttention",
    "DualAttention",
    "EfficientChannelAttention",
    "GlobalContext",
    "NonLocal",
    "PositionAttention",
    "SpatialAttention",
    "SqueezeExcite",
    "bottleneck_width",
    "eca_kernel_size",
]
