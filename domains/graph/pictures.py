"""A picture of one node's attention over its neighbourhood: the node at the centre, its
neighbours on a circle, each edge coloured and widened by its attention coefficient."""

from __future__ import annotations

import math

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont
from torch import Tensor

from framework.pictures import heatmap


def node_coefficients(edge_index: Tensor, alpha: Tensor, node: int) -> tuple[Tensor, Tensor]:
    """Sources j of the edges j -> ``node`` and their coefficients averaged over heads.

    Args:
        edge_index: (2, E) (source, target) of the edges attended over, self loops included.
        alpha: (E, H) or (E,) coefficients; over each target's incoming edges they sum to 1.
    """
    incoming = edge_index[1] == node
    coefficients = alpha[incoming].float()
    return edge_index[0, incoming], coefficients.mean(-1) if coefficients.dim() == 2 else coefficients


def draw_neighbourhood(node: int, sources: Tensor, coefficients: Tensor, title: str = "", size: int = 320,
                       max_neighbours: int = 24) -> Tensor:
    """(size, size, 3) uint8 image of ``node`` attending to ``sources`` with ``coefficients``.

    Neighbours sit on a circle in decreasing order of their coefficient (the strongest at
    the top, clockwise), at most ``max_neighbours`` of them; an edge's colour (dark blue ->
    yellow, on the scale 0 -> the largest coefficient) and its width grow with the
    coefficient, which is also written beside the neighbour. The node's coefficient on
    itself (the self loop) colours the ring round the centre. Node labels are ids.
    """
    sources, coefficients = sources.cpu(), coefficients.detach().float().cpu()
    own = coefficients[sources == node].sum().item()
    others = sources != node
    order = coefficients[others].argsort(descending=True)[:max_neighbours]
    shown, weights = sources[others][order].tolist(), coefficients[others][order]
    scale = max(weights.max().item() if len(weights) else 0.0, own, 1e-12)
    colours = heatmap(torch.cat([torch.tensor([0.0, scale, own]), weights]).unsqueeze(0), min_side=1)[0].tolist()

    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=max(9, size // 30))
    centre, radius, dot = size / 2, size * 0.33, size / 40
    for k, (neighbour, weight) in enumerate(zip(shown, weights.tolist())):
        angle = 2 * math.pi * k / len(shown) - math.pi / 2
        x, y = centre + radius * math.cos(angle), centre + radius * math.sin(angle)
        draw.line([(x, y), (centre, centre)], fill=tuple(colours[3 + k]), width=1 + round(7 * weight / scale))
        draw.ellipse([x - dot, y - dot, x + dot, y + dot], fill=(200, 200, 200), outline="black")
        label_x, label_y = centre + (radius + 2.6 * dot) * math.cos(angle), centre + (radius + 2.6 * dot) * math.sin(angle)
        draw.text((label_x, label_y), f"{neighbour}\n{weight:.2f}", fill="black", font=font, anchor="mm", align="center")
    ring = 1.8 * dot
    draw.ellipse([centre - ring, centre - ring, centre + ring, centre + ring], fill=tuple(colours[2]), outline="black",
                 width=2)
    draw.text((centre, centre), str(node), fill="white" if own < scale / 2 else "black", font=font, anchor="mm")
    hidden = int(others.sum()) - len(shown)
    caption = f"{title}  self {own:.2f}" + (f"  (+{hidden} not shown)" if hidden else "")
    draw.text((4, 4), caption.strip(), fill="black", font=font)
    return torch.from_numpy(np.asarray(image).copy())
