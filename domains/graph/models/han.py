"""HAN node classifier (Wang et al., Heterogeneous Graph Attention Network, WWW 2019): heterogeneous
graph attention over meta-path graphs, then a linear classifier."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

from torch import Tensor, nn
from torch.nn import functional as F

from framework.attention import GraphBlock, build
from framework.attention.spec import NONE
from framework.data.sizes import require_sizes
from framework.errors import ConfigError
from framework.layers import feature_dropout
from framework.values import Fraction, PositiveInt


class FeaturesOnly(nn.Module):
    """The no-attention baseline's layer: relu(W x + b) of every node alone, edges ignored (an MLP)."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_channels, out_channels)

    def forward(self, x: Tensor, edge_index: Mapping[str, Tensor]) -> Tensor:
        return F.relu(self.linear(x))


class HANClassifier(nn.Module):
    """HAN: node-level attention along every meta-path, semantic attention over them, a linear classifier.

    Layer l maps the target nodes' features h (N, F_l) to (N, heads * hidden_channels)::

        h = dropout(h);  h = block_l(h, {meta-path: edges})      (``han``: ReLU inside)
        logits = W dropout(h) + b

    The paper's model is one layer of 8 heads x 8 features, dropout 0.6, then the classifier.
    ``attention: none`` is the baseline that ignores the graph: each layer is relu(W h + b),
    the same widths (an MLP of the node features).

    Args:
        in_channels: features F of the target nodes (default: the data's ``in_channels``, filled
            by the command line).
        num_classes: classes K (default: the data's ``num_classes``).
        metapaths: the meta-paths' names, as the data names its edge types (default: the data's
            ``metapaths``, filled by the command line).
        attention: the graph block of every layer (``han``, a spec taking its arguments, or ``none``).
        hidden_channels: features per head.
        heads: attention heads.
        num_layers: HAN layers.
        dropout: dropout on every layer's input features and on the classifier's.
        attention_dropout: dropout on the node-level attention coefficients.

    Shapes: x (N, F), edge_index_dict {meta-path name: (2, E)} -> logits (N, K).
    """

    def __init__(
        self,
        in_channels: Optional[PositiveInt] = None,
        num_classes: Optional[PositiveInt] = None,
        *,
        metapaths: Optional[Sequence[str]] = None,
        attention: GraphBlock = "han",
        hidden_channels: PositiveInt = 8,
        heads: PositiveInt = 8,
        num_layers: PositiveInt = 1,
        dropout: Fraction = 0.6,
        attention_dropout: Fraction = 0.6,
    ) -> None:
        super().__init__()
        require_sizes("model", in_channels=in_channels, num_classes=num_classes, metapaths=metapaths)
        if not metapaths:
            raise ConfigError("model.metapaths must name at least one meta-path (data.metapaths)")
        self.in_channels, self.num_classes, self.dropout = in_channels, num_classes, dropout
        self.metapaths = list(metapaths)
        width = heads * hidden_channels
        self.layers = nn.ModuleList(
            FeaturesOnly(size, width)
            if attention == NONE
            else build(
                attention,
                size,
                hidden_channels,
                kind="graph",
                metadata=self.metapaths,
                heads=heads,
                dropout=attention_dropout,
            )
            for size in [in_channels] + [width] * (num_layers - 1)
        )
        self.classifier = nn.Linear(width, num_classes)

    def forward(self, x: Tensor, edge_index_dict: Mapping[str, Tensor]) -> Tensor:
        for layer in self.layers:
            x = layer(feature_dropout(x, self.dropout, self.training), edge_index_dict)
        return self.classifier(F.dropout(x, self.dropout, self.training))
