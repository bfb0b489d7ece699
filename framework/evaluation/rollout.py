"""Attention rollout (Abnar & Zuidema, "Quantifying Attention Flow in Transformers", ACL 2020).

In a stack of residual self-attention layers a token's state at layer l mixes the states of
layer l - 1 through the attention A_l and keeps its own through the residual connection.
Rollout follows the mixing down to the inputs::

    A^_l = (A_l + I) / 2            heads averaged, rows renormalised
    R    = A^_L A^_(L-1) ... A^_1   (B, N, N): how much input token j reaches output token i

The stacks are found by name: the sequence blocks (``mhsa``, ``local`` ...) of a model whose
names differ only in a layer index (``encoder.layers.0.attention``, ``encoder.layers.1.attention``).
"""

from __future__ import annotations

import re
from typing import Any, Optional

import torch
from torch import Tensor, nn

from .. import pictures
from ..attention import blocks_in, capture
from ..attention.registry import UnknownBlockError, info

LAYER = re.compile(r"^(.*?)(\d+)(\D.*)?$")


def _kind(block: nn.Module) -> Optional[str]:
    try:
        return info(block.block_name).kind
    except UnknownBlockError:
        return None


def self_attention_stacks(model: nn.Module) -> dict[str, list[str]]:
    """Stacks of two or more sequence blocks: ``{"encoder.layers.*.attention": [names in layer order]}``."""
    stacks: dict[str, list[tuple[int, str]]] = {}
    for name, module in blocks_in(model).items():
        if _kind(module) != "sequence":
            continue
        match = LAYER.match(name)
        if match is None:
            continue
        head, index, tail = match.group(1), int(match.group(2)), match.group(3) or ""
        stacks.setdefault(f"{head}*{tail}", []).append((index, name))
    return {key: [name for _, name in sorted(layers)] for key, layers in stacks.items() if len(layers) >= 2}


def attention_rollout(attentions: list[Tensor]) -> Tensor:
    """Rollout of attention maps (B, [heads,] N, N), first layer first: prod_l (A_l + I) / 2,
    heads averaged, each factor's rows renormalised to sum 1."""
    rolled: Optional[Tensor] = None
    for weights in attentions:
        a = weights.float()
        while a.dim() > 3:
            a = a.mean(1)
        a = (a + torch.eye(a.shape[-1], device=a.device)) / 2
        a = a / a.sum(-1, keepdim=True).clamp(min=1e-12)
        rolled = a if rolled is None else a @ rolled
    if rolled is None:
        raise ValueError("attention_rollout needs at least one attention map")
    return rolled


def rollouts(model: nn.Module, run: Any) -> dict[str, tuple[Tensor, Tensor]]:
    """Per stack of :func:`self_attention_stacks`, ``(last layer's attention (B, N, N) heads
    averaged, rollout (B, N, N))`` of one forward pass ``run()``."""
    stacks = self_attention_stacks(model)
    if not stacks:
        return {}
    names = [name for layers in stacks.values() for name in layers]
    with torch.no_grad(), capture(model, *names) as maps:
        run()
    found = {}
    for key, layers in stacks.items():
        if not all(maps.get(name) for name in layers):
            continue
        weights = [maps[name][0].weights for name in layers]
        if not all(isinstance(w, Tensor) and w.shape[-1] == w.shape[-2] for w in weights):
            continue
        last = weights[-1].float()
        while last.dim() > 3:
            last = last.mean(1)
        found[key] = (last, attention_rollout(weights))
    return found


def rollout_picture(last: Tensor, rolled: Tensor, stack: str = "") -> Any:
    """The first example's last-layer attention beside its rollout (queries down, keys across),
    positions that no query attends (padding) hatched: a figure of :mod:`framework.pictures`."""
    last, rolled = last[0].detach().float().cpu(), rolled[0].detach().float().cpu()
    attended = last.ne(0).any(0)
    return pictures.heatmaps(
        [
            ("last layer (heads averaged)", last, "attention weight"),
            ("rollout: input token j in output token i", rolled, "rolled-out weight"),
        ],
        rows="query position i",
        columns="key position j",
        valid_rows=attended,
        valid_columns=attended,
        caption_text=f"attention rollout of {stack}, first test example",
    )
