"""Node classifiers: a stack of graph attention layers (GAT, GATv2) or GCN layers."""

from __future__ import annotations

from typing import Optional

from torch import Tensor, nn
from torch.nn import functional as F
from torch_geometric.nn import GCNConv

from framework.attention import GraphBlock, build
from framework.attention.spec import NONE
from framework.data.sizes import require_sizes
from framework.layers import feature_dropout
from framework.values import Fraction, PositiveInt


class NodeClassifier(nn.Module):
    """Graph attention network (Velickovic et al., ICLR 2018) with a pluggable graph block.

    Layer l maps node features h (N, F_l) to (N, F_{l+1})::

        h = dropout(h);  h = block_l(h, edge_index);  h = elu(h)   (hidden layers)

    Hidden layers have ``heads`` heads of ``hidden_channels`` features, concatenated
    (F = heads * hidden_channels) or averaged (F = hidden_channels) by ``concat_hidden``; the
    output layer has ``output_heads`` heads of ``num_classes`` logits, averaged. Every block
    also drops attention coefficients with ``attention_dropout``. The paper's Cora model:
    two layers, 8 heads x 8 features, ELU, dropout 0.6 on features and coefficients, one
    output head (PubMed: 8 output heads, averaged).

    ``attention: none`` is the no-attention baseline, GCN (Kipf & Welling, ICLR 2017): each
    layer is a ``GCNConv``, whose coefficients are fixed by the degrees,
    alpha_ij = 1 / sqrt((d_i + 1)(d_j + 1)), instead of learned; it has no heads, so a
    hidden layer has ``hidden_channels`` features (times ``heads`` when concatenating).

    Args:
        in_channels: node features F.
        num_classes: classes K.
        attention: the graph block of every layer (``gat``, ``gatv2``, ``none`` or a spec).
        hidden_channels: features per head in hidden layers.
        heads: heads per hidden layer.
        output_heads: heads of the output layer (averaged).
        concat_hidden: concatenate the hidden layers' heads (else average them).
        num_layers: graph layers, output layer included.
        dropout: dropout on every layer's input features.
        attention_dropout: dropout on the attention coefficients.

    Shapes: x (N, F), edge_index (2, E) of (source, target) -> logits (N, K).
    """

    def __init__(
        self,
        in_channels: Optional[PositiveInt] = None,
        num_classes: Optional[PositiveInt] = None,
        attention: GraphBlock = "gat",
        hidden_channels: PositiveInt = 8,
        heads: PositiveInt = 8,
        output_heads: PositiveInt = 1,
        concat_hidden: bool = True,
        num_layers: PositiveInt = 2,
        dropout: Fraction = 0.6,
        attention_dropout: Fraction = 0.6,
    ) -> None:
        require_sizes("model", in_channels=in_channels, num_classes=num_classes)
        super().__init__()
        self.in_channels, self.num_classes, self.dropout = in_channels, num_classes, dropout
        width = hidden_channels * heads if concat_hidden else hidden_channels
        sizes = [in_channels] + [width] * (num_layers - 1)
        self.layers = nn.ModuleList(
            [
                self._layer(attention, size, hidden_channels, heads, concat_hidden, attention_dropout)
                for size in sizes[:-1]
            ]
            + [self._layer(attention, sizes[-1], num_classes, output_heads, False, attention_dropout)]
        )

    @staticmethod
    def _layer(
        attention: GraphBlock, in_channels: int, out_channels: int, heads: int, concat: bool, attention_dropout: float
    ) -> nn.Module:
        if attention == NONE:
            return GCNConv(in_channels, out_channels * heads if concat else out_channels)
        return build(
            attention, in_channels, out_channels, kind="graph", heads=heads, concat=concat, dropout=attention_dropout
        )

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for index, layer in enumerate(self.layers):
            x = layer(feature_dropout(x, self.dropout, self.training), edge_index)
            if index < len(self.layers) - 1:
                x = F.elu(x)
        return x
