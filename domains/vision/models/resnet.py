"""timm ResNets with a feature-map attention block in every residual block or stage.

Where a block goes is the registry's ``placement`` of the block: channel and spatial gates
(SE, ECA, CBAM, spatial, GC) go inside every residual block, on the residual branch before
the addition, through timm's own ``attn_layer`` hook (as in SE-ResNet and CBAM-ResNet);
blocks that mix all positions (non-local, criss-cross, DANet) go after the last residual
block of each chosen stage, as the non-local paper places them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Optional

import timm
import torch
from torch import Tensor, nn

from framework.attention import FeatureMapBlock, available, build, info
from framework.attention.spec import BlockArgumentsError
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.values import Fraction, PositiveInt

Placement = Literal["auto", "block", "stage"]
#: A ResNet stage that can take a block (``layer1`` ... ``layer4``).
Stage = Literal[1, 2, 3, 4]


def placement_of(attention: FeatureMapBlock, placement: Placement) -> str:
    """``block`` or ``stage``: where ``auto`` puts a block (the registry's placement of a named
    block; a block given by class path or spec goes in every residual block)."""
    if placement != "auto":
        return placement
    return info(attention).placement if isinstance(attention, str) and attention in available() else "block"


def make_block(attention: FeatureMapBlock, channels: int, options: Optional[dict[str, Any]] = None) -> nn.Module:
    """The feature-map block for ``channels``; arguments it does not take are named in the error."""
    try:
        return build(attention, channels, kind="feature_map", **(options or {}))
    except (TypeError, BlockArgumentsError) as err:
        if isinstance(err, BlockArgumentsError) and not options:
            raise  # a block of another kind, said as such
        raise ConfigError(f"model.attention_args {options} do not fit the block {attention!r}: {err}") from None


def _block_factory(attention: FeatureMapBlock, options: dict[str, Any]):
    """timm's ``attn_layer``: called with the channels (and device/dtype) of each residual block."""

    def make(channels: int, device: Optional[torch.device] = None, dtype: Optional[torch.dtype] = None) -> nn.Module:
        return make_block(attention, channels, options).to(device=device, dtype=dtype)

    return make


def create_resnet(
    name: str,
    *,
    attention: FeatureMapBlock = "none",
    placement: Placement = "auto",
    stages: Sequence[Stage] = (1, 2, 3, 4),
    attention_args: Optional[dict[str, Any]] = None,
    **timm_args: Any,
) -> nn.Module:
    """A timm ResNet (``resnet18``, ``resnet50``, ``resnet26d`` ...) with ``attention`` inserted.

    Args:
        name: a timm ResNet name.
        attention: a feature-map block (registry name, ``none``, dotted path or factory).
        placement: ``block`` (every residual block, via timm's ``attn_layer``), ``stage``
            (after each stage in ``stages``), or ``auto`` (stage for global blocks, else block).
        stages: the stages (1 to 4) that get a block when placed per stage.
        attention_args: keyword arguments of the block (``{"recurrence": 1}`` ...), passed through.
        timm_args: passed to ``timm.create_model`` (``num_classes``, ``in_chans``,
            ``output_stride``, ``features_only``, ``channels``, ``pretrained`` ...).
    """
    if not name.startswith(("resnet", "resnext", "seresnet", "wide_resnet")) or name not in timm.list_models():
        close = [n for n in timm.list_models("*resnet*") if n.startswith(name[:6])][:8]
        raise ConfigError(
            f"model.backbone must be a timm ResNet name, got {name!r}; e.g. {', '.join(close) or 'resnet18, resnet50'}"
        )
    options = attention_args or {}
    where = None if attention in (None, "none") else placement_of(attention, placement)
    if where == "block":
        timm_args["block_args"] = {**timm_args.get("block_args", {}), "attn_layer": _block_factory(attention, options)}
    model = timm.create_model(name, **timm_args)
    if where == "stage":
        for stage in stages:
            layer = getattr(model, f"layer{stage}")
            channels = layer[-1].conv3.out_channels if hasattr(layer[-1], "conv3") else layer[-1].conv2.out_channels
            layer.append(make_block(attention, channels, options))
    return model


def width_args(channels: Optional[Sequence[PositiveInt]], stem_width: Optional[PositiveInt]) -> dict[str, Any]:
    """timm arguments for the widths that are given (timm's defaults stand for the others)."""
    args: dict[str, Any] = {}
    if channels:
        if len(channels) != 4:
            raise ConfigError(f"model.channels must give the widths of the 4 stages, got {list(channels)}")
        args["channels"] = tuple(channels)
    if stem_width:
        args["stem_width"] = stem_width
    return args


class AttentionResNet(nn.Module):
    """Image classifier: a timm ResNet with a feature-map block in every block or stage.

    Args:
        num_classes: K.
        backbone: timm ResNet name (``resnet18``, ``resnet26``, ``resnet50`` ...).
        attention: the feature-map block (``se``, ``eca``, ``cbam``, ``non_local``, ``criss_cross``
            ..., or ``none`` for the plain ResNet).
        placement, stages, attention_args: see :func:`create_resnet`.
        in_chans: input channels.
        channels: widths of the four stages (timm's default 64, 128, 256, 512 ... when None).
        stem_width: channels of the stem (the timm model's own default when None).
        small_input: a 3x3 stride-1 stem without max pooling, for 32x32 images and smaller
            (CIFAR-style), instead of the 7x7 stride-2 stem and pooling.
        drop_rate: dropout before the classifier.
        pretrained: load timm's ImageNet weights (downloads them; off by default).

    Shapes: x (B, in_chans, H, W) -> logits (B, K).
    """

    def __init__(
        self,
        num_classes: Optional[PositiveInt] = None,
        backbone: str = "resnet18",
        attention: FeatureMapBlock = "none",
        placement: Placement = "auto",
        stages: Sequence[Stage] = (1, 2, 3, 4),
        attention_args: Optional[dict[str, Any]] = None,
        in_chans: PositiveInt = 3,
        channels: Optional[Sequence[PositiveInt]] = None,
        stem_width: Optional[PositiveInt] = None,
        small_input: bool = False,
        drop_rate: Fraction = 0.0,
        pretrained: bool = False,
    ) -> None:
        require_sizes("model", num_classes=num_classes)
        super().__init__()
        self.net = create_resnet(
            backbone,
            attention=attention,
            placement=placement,
            stages=stages,
            attention_args=attention_args,
            num_classes=num_classes,
            in_chans=in_chans,
            drop_rate=drop_rate,
            pretrained=pretrained,
            **width_args(channels, stem_width),
        )
        if small_input:
            self.net.conv1 = nn.Conv2d(in_chans, self.net.bn1.num_features, 3, padding=1, bias=False)
            self.net.maxpool = nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise ValueError(f"AttentionResNet: x must have shape (B, C, H, W), got {tuple(x.shape)}")
        return self.net(x)
