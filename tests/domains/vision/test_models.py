"""Vision models: where the blocks sit in the ResNets, the dilated segmentation network's shapes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from domains.vision.models import AttentionResNet, SegmentationNet
from framework.attention import AttentionBlock, NoAttention
from framework.attention.feature_map.cbam import CBAM
from framework.attention.feature_map.criss_cross import CrissCrossAttention

SMALL = dict(channels=(8, 16, 32, 64), stem_width=8)


def _blocks(model, kind):
    return [name for name, module in model.named_modules() if isinstance(module, kind)]


def test_gates_go_in_every_residual_block_through_timms_attn_layer():
    model = AttentionResNet(10, backbone="resnet18", attention="cbam", **SMALL)
    names = _blocks(model, CBAM)
    assert len(names) == 8  # resnet18: 2 blocks in each of 4 stages
    assert all(name.endswith(".se") for name in names)  # timm's slot, on the residual branch


def test_global_blocks_go_after_the_chosen_stages():
    model = AttentionResNet(10, backbone="resnet18", attention="criss_cross", stages=(3, 4), **SMALL)
    assert _blocks(model, CrissCrossAttention) == ["net.layer3.2", "net.layer4.2"]
    forced = AttentionResNet(10, backbone="resnet18", attention="cbam", placement="stage", stages=(2,), **SMALL)
    assert _blocks(forced, CBAM) == ["net.layer2.2"]


def test_the_baseline_has_no_block_and_the_block_gets_gradients():
    plain = AttentionResNet(10, backbone="resnet18", attention="none", **SMALL)
    assert not _blocks(plain, AttentionBlock) and not _blocks(plain, NoAttention)
    model = AttentionResNet(10, backbone="resnet18", attention="criss_cross", in_chans=1, small_input=True, **SMALL)
    logits = model(torch.randn(2, 1, 16, 16))
    assert logits.shape == (2, 10)
    F.cross_entropy(logits, torch.tensor([1, 2])).backward()
    gammas = [m.gamma.grad for m in model.modules() if isinstance(m, CrissCrossAttention)]
    assert len(gammas) == 4 and all(g is not None and g.abs().sum() > 0 for g in gammas)


def test_bad_backbone_and_widths_are_named():
    with pytest.raises(ValueError, match="model.backbone must be a timm ResNet name, got 'resnet19'.*resnet18"):
        AttentionResNet(10, backbone="resnet19")
    with pytest.raises(ValueError, match="model.channels must give the widths of the 4 stages"):
        AttentionResNet(10, channels=(8, 16))
    with pytest.raises(ValueError, match="unknown feature_map block 'cbamm'.*cbam"):
        AttentionResNet(10, attention="cbamm")


@pytest.mark.parametrize("attention", ["criss_cross", "danet", "non_local", "none"])
def test_segmentation_net_is_dilated_to_stride_8_and_upsamples(attention):
    model = SegmentationNet(5, attention=attention, backbone="resnet18", **SMALL)
    f3, f4 = model.backbone(torch.randn(1, 3, 48, 40))
    assert f3.shape[-2:] == f4.shape[-2:] == (6, 5)  # output stride 8 in stages 3 and 4
    out = model(torch.randn(2, 3, 48, 40))
    assert out.logits.shape == out.aux.shape == (2, 5, 48, 40)
    model.eval()
    assert model(torch.randn(2, 3, 48, 40)).aux is None  # the auxiliary head costs nothing at inference


def test_segmentation_head_carries_the_block_and_rejects_arguments_the_block_does_not_take():
    model = SegmentationNet(5, attention="criss_cross", backbone="resnet18", attention_args={"recurrence": 1}, **SMALL)
    assert isinstance(model.head.attention, CrissCrossAttention) and model.head.attention.recurrence == 1
    with pytest.raises(ValueError, match="model.attention_args {'recurrence': 2} do not fit the block 'danet'"):
        SegmentationNet(5, attention="danet", backbone="resnet18", attention_args={"recurrence": 2}, **SMALL)
