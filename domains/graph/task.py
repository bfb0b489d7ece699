"""Node classification: cross-entropy and accuracy on the nodes a batch scores, and pictures
of one node's neighbourhood attention."""

from __future__ import annotations

from typing import Any, Optional

from torch import Tensor, nn
from torch_geometric.data import Data

from framework.attention import capture
from framework.tasks import Classification

from .pictures import draw_neighbourhood, node_coefficients


class NodeClassification(Classification):
    """Classification of the nodes of a graph batch (``torch_geometric.data.Data``).

    The model maps ``(x (N, F), edge_index (2, E))`` to logits (N, K) for every node of the
    batch; loss, ``acc`` and macro ``f1`` count only the nodes in ``batch.target_mask``
    (the split's mask on a full graph, the seed nodes of a sampled batch). The best
    checkpoint is the one with the highest ``val/acc``.

    :meth:`images` draws, for every attention layer, the coefficients of node
    ``image_node``'s incoming edges (averaged over heads), logged as
    ``images/neighbourhood_attention`` by the ``attention_maps`` callback; a no-attention
    model, or a sampled batch that lacks the node, gives no picture.

    Args:
        num_classes: classes K.
        image_node: the node whose neighbourhood is drawn (its id in the whole graph).
        max_drawn_neighbours: neighbours drawn at most (the strongest ones).
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
    """

    def __init__(self, num_classes: int, image_node: int = 0, max_drawn_neighbours: int = 24,
                 label_smoothing: float = 0.0) -> None:
        super().__init__(num_classes, label_smoothing=label_smoothing)
        if image_node < 0:
            raise ValueError(f"task.image_node must be a node id (>= 0), got {image_node}")
        if max_drawn_neighbours < 1:
            raise ValueError(f"task.max_drawn_neighbours must be at least 1, got {max_drawn_neighbours}")
        self.image_node, self.max_drawn_neighbours = image_node, max_drawn_neighbours

    def check(self, model: nn.Module, data: Any) -> None:
        """The model must read the graph's features and both must know all its classes."""
        graph = getattr(data, "graph", None)
        if graph is None:
            return
        features, classes = graph.num_features, int(graph.y.max()) + 1
        given = getattr(model, "in_channels", features)
        if given != features:
            raise ValueError(f"model.in_channels is {given} but the graph's nodes have {features} features: "
                             f"set model.in_channels={features}")
        for key, value in (("task.num_classes", self.num_classes),
                           ("model.num_classes", getattr(model, "num_classes", classes))):
            if value < classes:
                raise ValueError(f"{key} is {value} but the graph's labels go up to {classes - 1}: set {key}={classes}")
        super().check(model, data)

    def split(self, batch: Data) -> tuple[Data, Tensor]:
        return batch, batch.y[batch.target_mask]

    def run_model(self, model: nn.Module, batch: Data) -> Tensor:
        """Logits of the scored nodes (``batch.target_mask``) only."""
        return model(batch.x, batch.edge_index)[batch.target_mask]

    def predict(self, model: nn.Module, batch: Data) -> dict[str, Tensor]:
        """``{"node": ids (M,) in the whole graph, "logits": (M, K)}`` of the scored nodes."""
        ids = batch.n_id if "n_id" in batch else None
        nodes = batch.target_mask.nonzero().flatten()
        return {"node": nodes if ids is None else ids[nodes], "logits": model(batch.x, batch.edge_index)[nodes]}

    def write_predictions(self, prediction: dict[str, Tensor], batch: Data, sink: Any) -> None:
        """``predictions.csv``: node id (in the whole graph), predicted class and its probability."""
        score, label = prediction["logits"].float().softmax(-1).max(-1)
        sink.take(len(label))
        sink.rows("predictions.csv", ["node", "class", "score"],
                  zip(prediction["node"].tolist(), label.tolist(), (f"{s:.6f}" for s in score.tolist())))

    def images(self, model: nn.Module, batch: Data) -> dict[str, list[Tensor]]:
        local = self._local_index(batch)
        if local is None:
            return {}
        with capture(model) as maps:
            model(batch.x, batch.edge_index)
        ids = batch.n_id if "n_id" in batch else None
        pictures = []
        for name, records in maps.items():
            edge_index, alpha = records[0].weights
            sources, coefficients = node_coefficients(edge_index, alpha, local)
            pictures.append(draw_neighbourhood(
                self.image_node, sources if ids is None else ids[sources].cpu(), coefficients,
                title=f"{name}, node {self.image_node}", max_neighbours=self.max_drawn_neighbours,
            ))
        return {"neighbourhood_attention": pictures} if pictures else {}

    def _local_index(self, batch: Data) -> Optional[int]:
        """The drawn node's index in the batch (None: a sampled batch without it)."""
        if "n_id" in batch:
            where = (batch.n_id == self.image_node).nonzero()
            return int(where[0]) if len(where) else None
        if self.image_node >= batch.num_nodes:
            raise ValueError(f"task.image_node={self.image_node}, but the graph has {batch.num_nodes} nodes")
        return self.image_node

