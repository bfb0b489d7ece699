"""The Vision Transformer: its encoder layer and the whole model against timm's with the same
weights (forward and backward), attention rollout against a naive product, the pictures of the
image classification task, and a few steps of learning."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from domains.vision import ImageClassification, ViTClassifier
from domains.vision.data import Digits
from domains.vision.models import AttentionResNet, attention_rollout
from framework.attention import capture
from framework.layers import EncoderLayer
from tests.attention.reference import randomize_
from tests.image_logger import readable

timm_vit = pytest.importorskip("timm.models.vision_transformer")

DIM, HEADS = 16, 4


def copy_block(ours: EncoderLayer, theirs: nn.Module) -> None:
    """timm's Block weights into our EncoderLayer: qkv split into W_Q, W_K, W_V; proj; norms; MLP."""
    attention = ours.attention
    with torch.no_grad():
        for part, projection in enumerate((attention.q_proj, attention.k_proj, attention.v_proj)):
            projection.weight.copy_(theirs.attn.qkv.weight[part * DIM : (part + 1) * DIM])
            projection.bias.copy_(theirs.attn.qkv.bias[part * DIM : (part + 1) * DIM])
        attention.out_proj.load_state_dict(theirs.attn.proj.state_dict())
        ours.norm1.load_state_dict(theirs.norm1.state_dict())
        ours.norm2.load_state_dict(theirs.norm2.state_dict())
        ours.mlp[0].load_state_dict(theirs.mlp.fc1.state_dict())
        ours.mlp[3].load_state_dict(theirs.mlp.fc2.state_dict())


def timm_model(depth: int = 2) -> nn.Module:
    """timm's ViT of our sizes; nn.LayerNorm's eps (1e-5) as ours, where timm's ViT uses 1e-6."""
    return timm_vit.VisionTransformer(
        img_size=8,
        patch_size=2,
        in_chans=1,
        num_classes=3,
        embed_dim=DIM,
        depth=depth,
        num_heads=HEADS,
        mlp_ratio=2.0,
        qkv_bias=True,
        norm_layer=nn.LayerNorm,
    )


def block_gradients(ours: EncoderLayer) -> dict[str, torch.Tensor]:
    """Our layer's parameter gradients under the names of timm's Block (W_Q, W_K, W_V joined into qkv)."""
    attention = ours.attention
    projections = (attention.q_proj, attention.k_proj, attention.v_proj)
    return {
        "attn.qkv.weight": torch.cat([p.weight.grad for p in projections]),
        "attn.qkv.bias": torch.cat([p.bias.grad for p in projections]),
        **{f"attn.proj.{n}": p.grad for n, p in attention.out_proj.named_parameters()},
        **{f"norm1.{n}": p.grad for n, p in ours.norm1.named_parameters()},
        **{f"norm2.{n}": p.grad for n, p in ours.norm2.named_parameters()},
        **{f"mlp.fc1.{n}": p.grad for n, p in ours.mlp[0].named_parameters()},
        **{f"mlp.fc2.{n}": p.grad for n, p in ours.mlp[3].named_parameters()},
    }


def test_encoder_layer_matches_timms_block(device):
    """Forward and backward (input and every parameter) of our pre-norm layer of ``mhsa`` against
    timm's ViT Block with the same weights, in float64; ours on every device, timm's on the CPU."""
    theirs = randomize_(timm_model().blocks[0], scale=0.3).double()
    ours = ViTClassifier(3, image_size=8, patch_size=2, dim=DIM, depth=1, num_heads=HEADS).encoder.layers[0].double()
    copy_block(ours, theirs)
    ours.to(device)
    x = torch.randn(2, 17, DIM, dtype=torch.float64)
    x_ours, x_theirs = x.clone().to(device).requires_grad_(), x.clone().requires_grad_()
    got, want = ours(x_ours), theirs(x_theirs)
    torch.testing.assert_close(got.cpu(), want, atol=1e-10, rtol=1e-8)
    cotangent = torch.randn_like(want)
    got.backward(cotangent.to(device))
    want.backward(cotangent)
    torch.testing.assert_close(x_ours.grad.cpu(), x_theirs.grad, atol=1e-10, rtol=1e-8)
    theirs_grads = {name: p.grad for name, p in theirs.named_parameters()}
    ours_grads = block_gradients(ours)
    assert sorted(ours_grads) == sorted(theirs_grads)
    for name, grad in ours_grads.items():
        torch.testing.assert_close(
            grad.cpu(), theirs_grads[name], atol=1e-10, rtol=1e-8, msg=lambda m, n=name: f"{n}: {m}"
        )


def test_attention_rollout_is_the_product_of_the_residual_mixed_layers():
    torch.manual_seed(0)
    layers = [torch.rand(2, 3, 5, 5).softmax(-1) for _ in range(3)]
    expected = []
    for b in range(2):
        product = torch.eye(5)
        for layer in layers:
            mixed = sum(layer[b, n] for n in range(3)) / 3 * 0.5 + torch.eye(5) * 0.5
            product = mixed @ product
        expected.append(product)
    rollout = attention_rollout(layers)
    torch.testing.assert_close(rollout, torch.stack(expected))
    torch.testing.assert_close(rollout.sum(-1), torch.ones(2, 5))
    with pytest.raises(ValueError, match="no layer's weights"):
        attention_rollout([])


def test_rollout_map_covers_the_patches_and_needs_weights():
    model = ViTClassifier(10, image_size=8, patch_size=2, dim=DIM, depth=2, num_heads=HEADS).eval()
    maps = model.rollout(torch.randn(3, 1, 8, 8))
    assert maps.shape == (3, 4, 4)
    torch.testing.assert_close(maps.sum((1, 2)), torch.ones(3))
    assert (
        ViTClassifier(10, image_size=8, patch_size=2, dim=DIM, depth=1, attention="none").rollout(
            torch.randn(1, 1, 8, 8)
        )
        is None
    )


def test_image_classification_draws_rollout_and_where_pixels_look():
    task = ImageClassification(10, num_images=2)
    batch = (torch.randn(3, 1, 8, 8), torch.tensor([0, 1, 2]))
    vit = ViTClassifier(10, image_size=8, patch_size=2, dim=DIM, depth=1, num_heads=HEADS).eval()
    pictures = task.images(vit, batch)
    assert list(pictures) == ["rollout"] and len(pictures["rollout"]) == 2
    readable(fig := pictures["rollout"][0])
    torch.testing.assert_close(
        torch.from_numpy(fig.axes[1].images[0].get_array().data).float(), vit.rollout(batch[0])[0]
    )
    assert not fig.axes[0].lines, "the query is [CLS], no pixel to mark"
    resnet = AttentionResNet(
        10,
        attention="axial",
        attention_args={"num_heads": 2},
        in_chans=1,
        channels=(8, 8, 8, 8),
        stem_width=8,
        small_input=True,
    ).eval()
    with torch.no_grad():
        pictures = task.images(resnet, batch)
    assert sorted(pictures) == [f"pixel_attention/net.layer{s}.2" for s in (1, 2, 3, 4)]
    with pytest.raises(ValueError, match=r"task.pixel must be \(row, column\) fractions"):
        ImageClassification(10, pixel=(0.5,))


def test_bad_sizes_and_blocks_are_named():
    with pytest.raises(ValueError, match="model.patch_size=3 must divide model.image_size=32"):
        ViTClassifier(10, patch_size=3)
    with pytest.raises(ValueError, match=r"ViTClassifier: x must have shape \(B, 1, 32, 32\)"):
        ViTClassifier(10)(torch.zeros(2, 1, 28, 28))
    with pytest.raises(ValueError, match="model.attention 'mhsa' does not take num_heads=4 and model.attention_args"):
        ViTClassifier(10, attention_args={"window": 3})
    local = ViTClassifier(10, attention="local", attention_args={"window": 2})
    assert local.encoder.layers[0].attention.window == 2 and local.encoder.layers[0].attention.num_heads == 4


def test_the_vit_learns_the_digits():
    torch.manual_seed(0)
    data = Digits(image_size=16, batch_size=64)
    data.setup("fit")
    batches = list(data.train_dataloader())[:4]
    model = ViTClassifier(10, image_size=16, patch_size=4, dim=32, depth=2, num_heads=4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    task, losses = ImageClassification(10), []
    for step in range(48):
        loss = task.step(model, batches[step % len(batches)], "train").loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert sum(losses[-4:]) < 0.6 * sum(losses[:4]), losses


@pytest.mark.parametrize("patch_size", [2, 1])  # 17 positions, each labelled; 65, every few labelled
def test_the_maps_of_a_vits_blocks_name_its_cls_position(patch_size):
    vit = ViTClassifier(10, image_size=8, patch_size=patch_size, dim=DIM, depth=1, num_heads=HEADS).eval()
    with torch.no_grad(), capture(vit) as maps:
        vit(torch.randn(1, 1, 8, 8))
    ((name, records),) = maps.items()
    fig = dict(vit.named_modules())[name].weights_picture(records[0], "example 1")
    readable(fig)
    ax = fig.axes[0]
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        assert labels[0].get_text() == "[CLS]" and labels[0].get_position() in ((0, 0), (0, 0.0))
        assert all(label.get_text() != "[CLS]" for label in labels[1:])
