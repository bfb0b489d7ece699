"""Node classification on meta-path graphs (HAN): cross-entropy and accuracy on the scored nodes,
and pictures of both levels of attention (meta-paths, and one node's meta-path neighbours)."""

from __future__ import annotations

from typing import Optional

from torch import Tensor, nn
from torch_geometric.data import HeteroData

from framework.attention import capture
from framework.errors import ConfigError
from framework.tasks import Classification

from ..pictures import metapath_attention, node_coefficients
from .nodes import NodeClassification


def target_inputs(batch: HeteroData) -> tuple[str, Tensor, dict[str, Tensor]]:
    """The node type a batch scores (the one with a ``target_mask``), its features (N, F) and its
    meta-path edges by name, {relation: (2, E)}, as ``data/hetero.py`` builds the batches."""
    node = next(t for t in batch.node_types if "target_mask" in batch[t])
    edges = {relation: batch[source, relation, target].edge_index for source, relation, target in batch.edge_types
             if source == target == node}
    return node, batch[node].x, edges


class HeteroNodeClassification(Classification):
    """Classification of the target nodes of a meta-path graph batch (``HeteroData`` of
    ``domains.graph.data.hetero``: one node type, one edge type per meta-path).

    The model maps ``(x (N, F), {meta-path: edge_index (2, E)})`` to logits (N, K) and reads the
    data's meta-paths in its order (checked with the sizes by the base's ``check``); loss,
    ``acc`` and macro ``f1`` count the nodes in the batch's ``target_mask`` only. The best
    checkpoint is the one with the highest ``val/acc``.

    :meth:`images` draws, for every attention layer, the semantic weights of the meta-paths
    (bars, in the order of ``model.metapaths``) beside node ``image_node``'s coefficients over
    its neighbours along every meta-path (heads averaged), logged as
    ``images/metapath_attention``; a model without attention gives no picture.

    Args:
        num_classes: classes K (default: the data's ``num_classes``, filled by the command line).
        image_node: the node whose neighbourhoods are drawn.
        max_drawn_neighbours: neighbours drawn at most per meta-path (the strongest ones).
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
    """

    def __init__(self, num_classes: Optional[int] = None, image_node: int = 0, max_drawn_neighbours: int = 16,
                 label_smoothing: float = 0.0) -> None:
        super().__init__(num_classes, label_smoothing=label_smoothing)
        if image_node < 0:
            raise ConfigError(f"task.image_node must be a node id (>= 0), got {image_node}")
        if max_drawn_neighbours < 1:
            raise ConfigError(f"task.max_drawn_neighbours must be at least 1, got {max_drawn_neighbours}")
        self.image_node, self.max_drawn_neighbours = image_node, max_drawn_neighbours

    def split(self, batch: HeteroData) -> tuple[HeteroData, Tensor]:
        node = target_inputs(batch)[0]
        return batch, batch[node].y[batch[node].target_mask]

    def run_model(self, model: nn.Module, batch: HeteroData) -> Tensor:
        """Logits of the scored nodes only."""
        node, x, edges = target_inputs(batch)
        return model(x, edges)[batch[node].target_mask]

    def predict(self, model: nn.Module, batch: HeteroData) -> dict[str, Tensor]:
        """``{"node": ids (M,), "logits": (M, K)}`` of the scored nodes."""
        node, x, edges = target_inputs(batch)
        nodes = batch[node].target_mask.nonzero().flatten()
        return {"node": nodes, "logits": model(x, edges)[nodes]}

    write_predictions = NodeClassification.write_predictions  # predictions.csv: node, class, score

    def images(self, model: nn.Module, batch: HeteroData) -> dict[str, list[Tensor]]:
        node, x, edges = target_inputs(batch)
        if self.image_node >= len(x):
            raise ConfigError(f"task.image_node={self.image_node}, but the graph has {len(x)} {node} nodes")
        with capture(model) as maps:
            model(x, edges)
        pictures = []
        for name, records in maps.items():
            node_level = [r.weights for r in records if isinstance(r.weights, tuple)]
            semantic = [r.weights for r in records if not isinstance(r.weights, tuple)]
            views = [(relation, *node_coefficients(edge_index, alpha, self.image_node))
                     for relation, (edge_index, alpha) in zip(edges, node_level)]
            if views:
                pictures.append(metapath_attention(self.image_node, semantic[0] if semantic else None, views,
                                                   f"{name}: {node} node {self.image_node}, heads averaged",
                                                   self.max_drawn_neighbours))
        return {"metapath_attention": pictures} if pictures else {}
