"""Heterogeneous graph attention (HAN): node-level attention along each meta-path, then semantic
attention over the meta-paths (Wang, Ji, Shi, Wang, Cui, Yu & Ye, Heterogeneous Graph Attention
Network, WWW 2019), over ``torch_geometric.nn.HANConv``."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import torch
import torch.nn.functional as F
from torch import Tensor

from ..base import AttentionBlock
from ..registry import register
from .gat import ablated_coefficients

if TYPE_CHECKING:  # the parameters' domains, for the config parser (see framework.attention)
    from ...values import Fraction, NonNegativeFloat, PositiveInt

#: The node type and relation of a homogeneous graph given as one tensor of features and one of edges.
NODE, EDGE = "node", "to"

EdgeType = tuple[str, str, str]
Metadata = tuple[list[str], list[EdgeType]]


def as_metadata(metadata: Union[None, Sequence[Any]]) -> Metadata:
    """PyG metadata ``(node types, edge types (source, relation, target))`` from a config value:
    a metadata pair (lists from YAML accepted), a list of relation names between nodes of one
    type ``"node"`` (meta-paths of one target type), or None (one relation)."""
    if metadata is None:
        return [NODE], [(NODE, EDGE, NODE)]
    if all(isinstance(name, str) for name in metadata):
        return [NODE], [(NODE, name, NODE) for name in metadata]
    if len(metadata) != 2:
        raise ValueError(
            f"han: metadata must be (node types, edge types) or a list of relation names, got {metadata!r}"
        )
    node_types, edge_types = metadata
    edge_types = [tuple(edge_type) for edge_type in edge_types]
    if any(
        len(edge_type) != 3 or edge_type[0] not in node_types or edge_type[2] not in node_types
        for edge_type in edge_types
    ):
        raise ValueError(
            f"han: every edge type must be (source, relation, target) of the node types {list(node_types)}, "
            f"got {edge_types}"
        )
    return list(node_types), edge_types  # type: ignore[return-value]


@register(
    "han",
    kind="graph",
    category="graph / heterogeneous graph attention (node- and semantic-level)",
    paper="Wang et al., Heterogeneous Graph Attention Network, WWW 2019",
)
class HeterogeneousGraphAttention(AttentionBlock):
    """Heterogeneous graph attention (HAN): GAT along every meta-path, then attention over the meta-paths.

    Node features of every type are projected into one space, h_i = M_{type(i)} x_i (split
    into H heads of C features). For every meta-path (edge type) Phi and head::

        e_ij^Phi     = LeakyReLU(a_src^Phi . h_j + a_dst^Phi . h_i)       for Phi-neighbours j -> i
        alpha_ij^Phi = softmax_j(e_ij^Phi)                                 node-level attention
        z_i^Phi      = ReLU(|| over heads of  sum_j alpha_ij^Phi h_j)

    and for every target node type, over its P meta-paths (semantic-level attention)::

        w_Phi    = 1/|V| sum_i q . tanh(W z_i^Phi + b)
        beta_Phi = softmax_Phi(w_Phi),        Z_i = sum_Phi beta_Phi z_i^Phi

    Wraps ``torch_geometric.nn.HANConv`` (parameters ``conv.proj`` = M, ``conv.lin_src`` /
    ``conv.lin_dst`` = a, ``conv.k_lin`` = W, b and ``conv.q``), which runs when no weights are
    wanted. HANConv returns no node-level coefficients, so with weights (asked, captured or
    ablated) the block computes the same equations itself from the conv's parameters. The
    paper's sigma is ELU; HANConv's, and so this block's, is ReLU. Meta-path neighbours come
    from the data (``torch_geometric.transforms.AddMetaPaths``); a type with no edge into it
    gets no output.

    Args:
        in_channels: input features of every node type (an int for all, or a mapping).
        out_channels: features per head C.
        metadata: ``(node types, edge types)`` as ``HeteroData.metadata()`` gives them, or a
            list of relation names (meta-paths) between nodes of one type ``"node"``, or
            None: one relation (then the block takes a tensor of features and one of edges,
            as ``gat`` does).
        heads: attention heads H.
        concat: concatenate the heads (H * C outputs) or average them (C outputs, after the ReLU).
        dropout: dropout on the node-level coefficients while training.
        negative_slope: slope of the LeakyReLU.

    Shapes:
        x_dict {node type: (N_t, F_t)} and edge_index_dict {(source, relation, target): (2, E)};
        or x (N, F) with edge_index_dict {relation: (2, E)} (one node type), or with edge_index
        (2, E) (one relation). Output {node type: (N_t, H * C)} (or (N_t, C)), a tensor for a
        tensor x. With ``need_weights=True``: ``AttentionOutput(output, (node_level, semantic))``,
        node_level {edge type: (edge_index (2, E), alpha (E, H))} and semantic {node type: (P,)},
        keyed as the inputs are (one ``(edge_index, alpha)`` for one tensor of edges, one (P,)
        tensor for one tensor of features).

    Captured weights: per call, one ``(edge_index, alpha)`` record per edge type, then one (P,)
    record of semantic weights per node type with incoming edges.

    Paper: Wang, Ji, Shi, Wang, Cui, Yu & Ye, "Heterogeneous Graph Attention Network", WWW 2019.
    """

    def __init__(
        self,
        in_channels: Union[PositiveInt, Mapping[str, PositiveInt]],
        out_channels: PositiveInt,
        metadata: Union[None, Sequence[Any]] = None,
        heads: PositiveInt = 1,
        concat: bool = True,
        dropout: Fraction = 0.0,
        negative_slope: NonNegativeFloat = 0.2,
    ) -> None:
        super().__init__()
        self.metadata = as_metadata(metadata)
        node_types = self.metadata[0]
        self.in_channels = (
            dict(in_channels) if isinstance(in_channels, Mapping) else dict.fromkeys(node_types, in_channels)
        )
        if set(self.in_channels) != set(node_types):
            raise ValueError(
                f"han: in_channels names the node types {sorted(self.in_channels)}, metadata {sorted(node_types)}"
            )
        self.out_channels, self.heads, self.concat = out_channels, heads, concat
        han_conv = importlib.import_module("torch_geometric.nn").HANConv
        self.conv = han_conv(
            self.in_channels,
            heads * out_channels,
            self.metadata,
            heads=heads,
            negative_slope=negative_slope,
            dropout=dropout,
        )

    def forward(
        self,
        x: Union[Tensor, Mapping[str, Tensor]],
        edge_index: Union[Tensor, Mapping[Any, Tensor]],
        *,
        need_weights: bool = False,
    ) -> Any:
        x_dict, edge_index_dict, keys = self._inputs(x, edge_index)
        if self.wants_weights(need_weights):
            out, node_level, semantic = self._with_weights(x_dict, edge_index_dict)
        else:
            out, node_level, semantic = self.conv(x_dict, edge_index_dict), None, None
        if not self.concat:
            out = {t: None if z is None else z.unflatten(-1, (self.heads, -1)).mean(-2) for t, z in out.items()}
        if isinstance(x, Tensor):
            out = out[NODE]
        weights = None
        if need_weights:
            node_level = {keys[edge_type]: weights for edge_type, weights in node_level.items()}
            if isinstance(edge_index, Tensor):
                node_level = node_level[EDGE]
            weights = (node_level, semantic[NODE] if isinstance(x, Tensor) else semantic)
        return self.finish(out, weights, need_weights, recorded=True)  # one record per edge type and node type

    def _inputs(
        self, x: Union[Tensor, Mapping[str, Tensor]], edge_index: Union[Tensor, Mapping[Any, Tensor]]
    ) -> tuple[dict[str, Tensor], dict[EdgeType, Tensor], dict[EdgeType, Any]]:
        """Dicts keyed as HANConv wants them, checked, and the caller's key of every edge type."""
        x_dict = {NODE: x} if isinstance(x, Tensor) else dict(x)
        given = {EDGE: edge_index} if isinstance(edge_index, Tensor) else dict(edge_index)
        keys = {(NODE, key, NODE) if isinstance(key, str) else tuple(key): key for key in given}
        for node_type, features in x_dict.items():
            if node_type not in self.in_channels:
                raise ValueError(f"han: node type {node_type!r} is not in the block's metadata {self.metadata[0]}")
            self.expect(
                f"x[{node_type!r}]" if node_type != NODE else "x", features, "N F", F=self.in_channels[node_type]
            )
        for edge_type, key in keys.items():
            if edge_type not in self.metadata[1]:
                raise ValueError(f"han: edge type {key!r} is not in the block's metadata {self.metadata[1]}")
            self.expect(f"edge_index[{key!r}]" if key != EDGE else "edge_index", given[key], "R E", R=2)
        return x_dict, {edge_type: given[key] for edge_type, key in keys.items()}, keys

    def _with_weights(
        self, x_dict: dict[str, Tensor], edge_index_dict: dict[EdgeType, Tensor]
    ) -> tuple[dict[str, Optional[Tensor]], dict[EdgeType, tuple[Tensor, Tensor]], dict[str, Tensor]]:
        """HANConv's equations, keeping (and under an ablation replacing) both levels' weights."""
        softmax = importlib.import_module("torch_geometric.utils").softmax
        conv, heads = self.conv, self.heads
        h = {t: conv.proj[t](x).unflatten(-1, (heads, -1)) for t, x in x_dict.items()}  # (N_t, H, C)
        per_target: dict[str, list[Tensor]] = {t: [] for t in x_dict}
        node_level = {}
        for edge_type, edges in edge_index_dict.items():
            source, _, target = edge_type
            key = "__".join(edge_type)
            scores = (h[source] * conv.lin_src[key]).sum(-1)[edges[0]] + (h[target] * conv.lin_dst[key]).sum(-1)[
                edges[1]
            ]
            alpha = softmax(F.leaky_relu(scores, conv.negative_slope), edges[1], num_nodes=len(h[target]))  # (E, H)
            if self.ablation is not None:
                alpha = ablated_coefficients(edges[1], alpha, self.ablation)
            self.record((edges, alpha))
            node_level[edge_type] = (edges, alpha)
            messages = h[source][edges[0]] * F.dropout(alpha, conv.dropout, self.training).unsqueeze(-1)
            z = torch.zeros_like(h[target]).index_add_(0, edges[1], messages)
            per_target[target].append(F.relu(z.flatten(1)))
        out: dict[str, Optional[Tensor]] = {}
        semantic = {}
        for node_type, outputs in per_target.items():
            if not outputs:
                out[node_type] = None
                continue
            z = torch.stack(outputs)  # (P, N, H * C)
            beta = self.ablate(((conv.q * torch.tanh(conv.k_lin(z)).mean(1)).sum(-1)).softmax(0))
            self.record(beta)
            semantic[node_type] = beta
            out[node_type] = (beta[:, None, None] * z).sum(0)
        return out, node_level, semantic

    def weights_image(self, record: object) -> None:
        """Edge weights and meta-path weights are no image; the graph domain draws them itself."""
        return None
