"""Pictures of one node's attention over its neighbourhood (matplotlib figures of
:mod:`framework.pictures`): the node at the centre, its neighbours on a circle, each edge
coloured and widened by its attention coefficient; for HAN, the meta-paths' weights beside."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

from torch import Tensor

from framework.pictures import caption, colour_bar, figure, picture, scale


def node_coefficients(edge_index: Tensor, alpha: Tensor, node: int) -> tuple[Tensor, Tensor]:
    """Sources j of the edges j -> ``node`` and their coefficients averaged over heads.

    Args:
        edge_index: (2, E) (source, target) of the edges attended over, self loops included.
        alpha: (E, H) or (E,) coefficients; over each target's incoming edges they sum to 1.
    """
    incoming = edge_index[1] == node
    coefficients = alpha[incoming].float()
    return edge_index[0, incoming], coefficients.mean(-1) if coefficients.dim() == 2 else coefficients


def neighbourhood(
    ax: Any, node: int, sources: Tensor, coefficients: Tensor, title: str = "", max_neighbours: int = 24
) -> Any:
    """Draw ``node`` attending to ``sources`` with ``coefficients`` on ``ax``; the colour scale
    (0 -> the largest coefficient) is returned for a colour bar.

    Neighbours sit on a circle in decreasing order of their coefficient (the strongest at
    the top, clockwise), at most ``max_neighbours`` of them, each labelled with its id and
    coefficient; an edge's colour and width grow with the coefficient. The node's
    coefficient on itself (the self loop) colours the disc at the centre. The title says
    how many neighbours are not shown.
    """
    sources, coefficients = sources.cpu(), coefficients.detach().float().cpu()
    own = coefficients[sources == node].sum().item()
    others = sources != node
    order = coefficients[others].argsort(descending=True)[:max_neighbours]
    shown, weights = sources[others][order].tolist(), coefficients[others][order].tolist()
    colours = scale(0.0, max(weights + [own, 1e-12]))
    largest = colours.norm.vmax
    for k, (neighbour, weight) in enumerate(zip(shown, weights)):
        angle = math.pi / 2 - 2 * math.pi * k / len(shown)
        x, y = math.cos(angle), math.sin(angle)
        ax.plot([0, x], [0, y], color=colours.to_rgba(weight), linewidth=1 + 6 * weight / largest, zorder=1)
        ax.scatter([x], [y], s=260, color="0.85", edgecolors="black", zorder=2)
        ax.text(1.22 * x, 1.22 * y, f"{neighbour}\n{weight:.2f}", ha="center", va="center", fontsize=8)
    ax.scatter([0], [0], s=700, color=colours.to_rgba(own), edgecolors="black", linewidths=2, zorder=3)
    ax.text(
        0, 0, str(node), ha="center", va="center", fontsize=9, color="white" if own < largest / 2 else "black", zorder=4
    )
    hidden = int(others.sum()) - len(shown)
    ax.set_title(f"{title}\nself {own:.2f}" + (f", {hidden} more not shown" if hidden else ""), fontsize=9)
    ax.set_xlim(-1.45, 1.45)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return colours


@picture
def draw_neighbourhood(
    node: int, sources: Tensor, coefficients: Tensor, title: str = "", max_neighbours: int = 24
) -> Any:
    """A figure of :func:`neighbourhood` with its colour bar; ``title`` is the caption."""
    fig = figure(5.6, 5.0)
    ax = fig.add_subplot()
    colour_bar(
        ax,
        neighbourhood(ax, node, sources, coefficients, "neighbours: id and coefficient", max_neighbours),
        "attention coefficient (heads averaged)",
    )
    caption(fig, title)
    return fig


@picture
def metapath_attention(
    node: int,
    semantic: Optional[Tensor],
    views: Sequence[tuple[str, Tensor, Tensor]],
    title: str = "",
    max_neighbours: int = 24,
) -> Any:
    """HAN's two levels for one node: the meta-paths' semantic weights ((P,) over the
    ``views``' relation names) as bars, and for each meta-path ``(relation, sources,
    coefficients)`` the node's neighbourhood, each with its colour bar."""
    panels = len(views) + (semantic is not None)
    fig = figure(4.6 * panels, 4.6)
    axes = list(fig.subplots(1, panels)) if panels > 1 else [fig.add_subplot()]
    if semantic is not None:
        ax = axes.pop(0)
        ax.bar([relation for relation, _, _ in views], semantic.detach().float().cpu().tolist(), color="tab:blue")
        ax.set_xlabel("meta-path")
        ax.set_ylabel("semantic attention weight")
        ax.set_title("meta-paths (all nodes)", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    for ax, (relation, sources, coefficients) in zip(axes, views):
        colours = neighbourhood(ax, node, sources, coefficients, f"{relation} neighbours", max_neighbours)
        colour_bar(ax, colours, "coefficient")
    caption(fig, title)
    return fig
