"""Graph attention: each node attends to its neighbours along the edges of a graph.

Thin :class:`~framework.attention.AttentionBlock` wrappers over PyG's message-passing
convolutions (Brauwers & Frasincar's taxonomy lists them with self-attention; Chaudhari
et al., 2021, §5.4). PyG does the sparse work: node-level projections, a segment softmax
over each node's incoming edges and a scatter of the weighted messages, so memory grows
with the number of edges, never with N^2. PyG is imported when the first block is built,
so that ``import framework.attention`` does not pay its start-up time (about 2 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

import torch
from torch import Tensor

from ..base import AttentionBlock, AttentionOutput
from ..registry import register

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, NonNegativeFloat, PositiveInt


def ablated_coefficients(target: Tensor, alpha: Tensor, mode: str) -> Tensor:
    """Attention coefficients alpha (E, H) over each target node's incoming edges replaced as an
    ablation replaces weights (:func:`framework.attention.ablation.ablated`): ``uniform`` 1 / in-degree
    (mean aggregation), ``random`` a random point of each node's simplex, ``permute`` each node's
    own coefficients shuffled among its incoming edges."""
    if mode == "permute":
        grouped = target.argsort(stable=True)  # edges by target, in their order
        shuffled = (target.to(alpha.dtype) + 0.5 * torch.rand(len(target), device=target.device)).argsort()
        result = torch.empty_like(alpha)
        result[grouped] = alpha[shuffled]  # both orders group the edges by target alike
        return result
    draw = torch.ones_like(alpha) if mode == "uniform" else -torch.rand_like(alpha).clamp(min=1e-12).log()
    total = torch.zeros(int(target.max()) + 1, alpha.shape[-1], dtype=alpha.dtype, device=alpha.device)
    return draw / total.index_add_(0, target, draw)[target]


class _GraphAttention(AttentionBlock):
    """Shared body of the GAT blocks; subclasses name a convolution of ``torch_geometric.nn``."""

    conv_name: ClassVar[str]

    def __init__(
        self,
        in_channels: Union[PositiveInt, tuple[PositiveInt, PositiveInt]],
        out_channels: PositiveInt,
        heads: PositiveInt = 1,
        concat: bool = True,
        dropout: Fraction = 0.0,
        negative_slope: NonNegativeFloat = 0.2,
        add_self_loops: bool = True,
        bias: bool = True,
        **conv_options: Any,
    ) -> None:
        super().__init__()
        self.in_channels = in_channels
        conv_class = getattr(importlib.import_module("torch_geometric.nn"), self.conv_name)
        self.conv = conv_class(
            in_channels,
            out_channels,
            heads=heads,
            concat=concat,
            dropout=dropout,
            negative_slope=negative_slope,
            add_self_loops=add_self_loops,
            bias=bias,
            **conv_options,
        )

    def forward(
        self,
        x: Union[Tensor, tuple[Tensor, Tensor]],
        edge_index: Tensor,
        edge_attr: Optional[Tensor] = None,
        *,
        need_weights: bool = False,
        **inputs: Any,
    ) -> Tensor | AttentionOutput:
        sources, targets = (
            (self.in_channels, self.in_channels) if isinstance(self.in_channels, int) else self.in_channels
        )
        if isinstance(x, tuple):  # bipartite: (source nodes, target nodes)
            self.expect("x[0]", x[0], "N F", F=sources)
            if x[1] is not None:
                self.expect("x[1]", x[1], "M F", F=targets)
        else:
            self.expect("x", x, "N F", F=sources)
        self.expect("edge_index", edge_index, "R E", R=2)
        if not self.wants_weights(need_weights):
            return self.conv(x, edge_index, edge_attr, **inputs)
        out, weights = self.conv(x, edge_index, edge_attr, return_attention_weights=True, **inputs)
        if self.ablation is not None:
            weights = (weights[0], ablated_coefficients(weights[0][1], weights[1], self.ablation))
            self.conv.message = lambda x_j, alpha: weights[1].unsqueeze(-1) * x_j  # messages with the new coefficients
            try:
                out = self.conv(x, edge_index, edge_attr, **inputs)
            finally:
                del self.conv.message
        return self.finish(out, weights, need_weights)

    def weights_image(self, record: object) -> None:
        """Edge weights are no image; the graph domain draws neighbourhoods itself."""
        return None


@register(
    "gat",
    kind="graph",
    category="graph / graph attention",
    paper="Velickovic et al., Graph Attention Networks, ICLR 2018",
)
class GraphAttention(_GraphAttention):
    """Graph attention (GAT): a softmax over each node's neighbours of a static score.

    For every head, with h_i = W x_i::

        e_ij     = LeakyReLU(a_dst . h_i + a_src . h_j)          for edges j -> i
        alpha_ij = softmax_j(e_ij)                                over the incoming edges of i
        out_i    = || or mean over heads of  sum_j alpha_ij h_j,  + b

    The ranking of neighbours j by e_ij is the same for every node i ("static" attention,
    Brody et al., 2022). Wraps ``torch_geometric.nn.GATConv`` (parameters ``conv.lin`` = W,
    ``conv.att_src``, ``conv.att_dst``, ``conv.bias``).

    Args:
        in_channels: input node features F_in.
        out_channels: features per head C.
        heads: attention heads H.
        concat: concatenate the heads (H * C outputs) or average them (C outputs).
        dropout: dropout on the attention coefficients while training.
        negative_slope: slope of the LeakyReLU for negative scores.
        add_self_loops: every node also attends to itself (existing self loops are
            replaced by one loop per node).
        bias: learn the additive output bias b.
        conv_options: further keyword arguments of ``GATConv`` (``edge_dim`` for edge
            features, ``fill_value``, ``residual`` ...), passed through as they are.

    Shapes:
        x (N, F_in), or ``(x_source (N, F_s), x_target (M, F_t))`` for a bipartite graph with
        ``in_channels=(F_s, F_t)``; edge_index (2, E) of (source, target) node indices;
        ``edge_attr`` (E, edge_dim) with ``edge_dim``; further keyword inputs of
        ``GATConv.forward`` (``size``) are passed through.
        Output (N, H * C) with ``concat``, else (N, C). With ``need_weights=True``:
        ``AttentionOutput(output, weights=(edge_index', alpha))``, edge_index' (2, E') the
        edges attended over (self loops included) and alpha (E', H).

    Captured weights: the same ``(edge_index', alpha)`` tuple, one record per call.

    Paper: Velickovic, Cucurull, Casanova, Romero, Lio & Bengio, "Graph Attention
    Networks", ICLR 2018.
    """

    conv_name = "GATConv"


@register(
    "gatv2",
    kind="graph",
    category="graph / graph attention (dynamic)",
    paper="Brody, Alon & Yahav, How Attentive are Graph Attention Networks?, ICLR 2022",
)
class GraphAttentionV2(_GraphAttention):
    """Graph attention v2 (GATv2): the LeakyReLU moves inside the score, so it is dynamic.

    For every head::

        e_ij     = a . LeakyReLU(W_dst x_i + W_src x_j)           for edges j -> i
        alpha_ij = softmax_j(e_ij)                                over the incoming edges of i
        out_i    = || or mean over heads of  sum_j alpha_ij W_src x_j,  + b

    Each node can rank its neighbours differently ("dynamic" attention). Wraps
    ``torch_geometric.nn.GATv2Conv`` (parameters ``conv.lin_l`` = W_src and
    ``conv.lin_r`` = W_dst, each with a bias when ``bias``, ``conv.att`` = a, ``conv.bias`` = b).

    Args:
        in_channels: input node features F_in.
        out_channels: features per head C.
        heads: attention heads H.
        concat: concatenate the heads (H * C outputs) or average them (C outputs).
        dropout: dropout on the attention coefficients while training.
        negative_slope: slope of the LeakyReLU inside the score.
        add_self_loops: every node also attends to itself.
        bias: learn the biases of W_src, W_dst and the output bias b.
        conv_options: further keyword arguments of ``GATv2Conv`` (``edge_dim``,
            ``share_weights``, ``fill_value``, ``residual`` ...), passed through as they are.

    Shapes:
        x (N, F_in), or ``(x_source, x_target)`` for a bipartite graph with
        ``in_channels=(F_s, F_t)``; edge_index (2, E) of (source, target) node indices;
        ``edge_attr`` (E, edge_dim) with ``edge_dim``; further keyword inputs of
        ``GATv2Conv.forward`` are passed through.
        Output (N, H * C) with ``concat``, else (N, C). With ``need_weights=True``:
        ``AttentionOutput(output, weights=(edge_index', alpha))``, alpha (E', H).

    Captured weights: the same ``(edge_index', alpha)`` tuple, one record per call.

    Paper: Brody, Alon & Yahav, "How Attentive are Graph Attention Networks?", ICLR 2022.
    """

    conv_name = "GATv2Conv"
