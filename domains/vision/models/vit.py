"""A small Vision Transformer (Dosovitskiy et al., ICLR 2021) over the library's sequence blocks,
and attention rollout (Abnar & Zuidema, ACL 2020) to see where its [CLS] token looks.

::

    x (B, C, H, W) -> p x p patches, linearly embedded: (B, N, D),  N = (H / p) (W / p)
    [CLS; patches] + learned positions -> depth pre-norm encoder layers -> LayerNorm -> [CLS] -> head

The encoder is :class:`framework.layers.AttentionEncoder` (``x + block(LN(x))``, then
``x + MLP(LN(x))``), the layer of timm's ``VisionTransformer``: with the same weights the two
compute the same function (tests/domains/vision/test_vit.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import torch
from torch import Tensor, nn

from framework.attention import AttentionBlock, SequenceBlock, build, capture
from framework.attention.spec import BlockArgumentsError
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.layers import AttentionEncoder, PositionalEncoding
from framework.values import Fraction, NonNegativeInt, PositiveFloat, PositiveInt


def attention_rollout(weights: Sequence[Tensor]) -> Tensor:
    """Attention rollout: how much each input token reaches each output token through all layers,
    the residual connection counted as attention of a token to itself::

        A'_l = (mean_heads A_l + I) / 2, rows renormalised      R = A'_L ... A'_2 A'_1

    Args:
        weights: one (B, h, N, N) or (B, N, N) tensor per layer, the first layer first.

    Returns: R (B, N, N); row i says from which input tokens output token i is made.
    """
    rollout: Optional[Tensor] = None
    for layer in weights:
        mixed = layer.mean(1) if layer.dim() == 4 else layer
        mixed = 0.5 * mixed + 0.5 * torch.eye(mixed.shape[-1], dtype=mixed.dtype, device=mixed.device)
        mixed = mixed / mixed.sum(-1, keepdim=True)
        rollout = mixed if rollout is None else mixed @ rollout
    if rollout is None:
        raise ValueError("attention_rollout: no layer's weights were given")
    return rollout


class ViTClassifier(nn.Module):
    """Vision Transformer classifier: patch embedding, a [CLS] token, learned positions, a
    pre-norm encoder of ``attention`` blocks (``mhsa``), the head on the encoded [CLS] token.

    Args:
        num_classes: K.
        image_size: side of the (square) input images.
        patch_size: p, the side of the patches (must divide ``image_size``).
        in_chans: input channels.
        dim, depth, mlp_ratio: width D, encoder layers and the MLP's width ratio.
        num_heads: heads of the encoder's blocks (passed to the block as ``num_heads``).
        attention: the encoder's sequence block (``mhsa``; ``local`` and other blocks that take
            ``num_heads`` swap in).
        attention_args: further keyword arguments of the block, passed through.
        dropout: after the positions, in the encoder and before the head.

    Shapes: x (B, in_chans, image_size, image_size) -> logits (B, K).
    """

    def __init__(
        self,
        num_classes: Optional[PositiveInt] = None,
        image_size: PositiveInt = 32,
        patch_size: PositiveInt = 4,
        in_chans: PositiveInt = 1,
        dim: PositiveInt = 64,
        depth: NonNegativeInt = 4,
        num_heads: PositiveInt = 4,
        mlp_ratio: PositiveFloat = 2.0,
        attention: SequenceBlock = "mhsa",
        attention_args: Optional[dict[str, Any]] = None,
        dropout: Fraction = 0.0,
    ) -> None:
        require_sizes("model", num_classes=num_classes)
        super().__init__()
        if image_size % patch_size:
            raise ConfigError(f"model.patch_size={patch_size} must divide model.image_size={image_size}")
        self.image_size, self.in_chans = image_size, in_chans
        self.grid = (image_size // patch_size,) * 2
        self.patches = nn.Conv2d(in_chans, dim, patch_size, stride=patch_size)  # one linear map per patch
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.positions = PositionalEncoding(dim, 1 + self.grid[0] * self.grid[1], learned=True, dropout=dropout)
        self.encoder = AttentionEncoder(
            dim, depth, _with_heads(attention, num_heads, attention_args or {}), mlp_ratio, dropout
        )
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(dim, num_classes)
        for block in self.encoder.modules():
            if isinstance(block, AttentionBlock):
                block.leading_tokens = ("[CLS]",)  # position 0 of every map, named on its axes

    def no_weight_decay(self) -> set[str]:
        """The [CLS] embedding is not decayed (framework.optim)."""
        return {"cls"}

    def forward(self, x: Tensor) -> Tensor:
        expected = (self.in_chans, self.image_size, self.image_size)
        if x.ndim != 4 or tuple(x.shape[1:]) != expected:
            raise ValueError(
                f"ViTClassifier: x must have shape (B, {', '.join(map(str, expected))}) "
                f"(model.in_chans, model.image_size), got {tuple(x.shape)}"
            )
        tokens = self.patches(x).flatten(2).transpose(1, 2)  # (B, N, D), patches in row-major order
        tokens = self.positions(torch.cat([self.cls.expand(len(x), -1, -1), tokens], dim=1))
        return self.head(self.dropout(self.encoder(tokens)[:, 0]))

    def rollout(self, x: Tensor) -> Optional[Tensor]:
        """(B, H / p, W / p): the [CLS] row of the attention rollout over the patches (the
        [CLS] column left out, renormalised); None when the encoder's blocks record no weights."""
        with torch.no_grad(), capture(self.encoder) as maps:
            self(x)
        weights = [r.weights for records in maps.values() for r in records]
        if not weights:
            return None
        patches = attention_rollout(weights)[:, 0, 1:]
        return (patches / patches.sum(-1, keepdim=True)).unflatten(-1, self.grid)


def _with_heads(attention: SequenceBlock, num_heads: int, options: dict[str, Any]):
    """The encoder's block factory: ``attention`` built with ``num_heads`` and ``options``."""

    def make(dim: int) -> nn.Module:
        try:
            return build(attention, dim, kind="sequence", num_heads=num_heads, **options)
        except (TypeError, BlockArgumentsError) as err:
            raise ConfigError(
                f"model.attention {attention!r} does not take num_heads={num_heads} and "
                f"model.attention_args {options}: {err}"
            ) from None

    return make
