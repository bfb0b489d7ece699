"""Node classification: cross-entropy and accuracy on the nodes a batch scores, and pictures
of one node's neighbourhood attention."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple, Optional

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch, Data
from torch_geometric.utils import k_hop_subgraph

from framework.attention import capture
from framework.errors import ConfigError
from framework.evaluation.protocol import GoldView, ItemAttention, ItemForward, Watched
from framework.tasks import Classification
from framework.values import ClassCount, Fraction, NonNegativeInt, PositiveInt

from ..pictures import draw_neighbourhood, node_coefficients

#: Scored nodes the faithfulness and intrinsic tests take from a test batch (evenly spaced).
EVALUATED_NODES = 128


class Neighbours(NamedTuple):
    """The in-neighbours of a batch's scored nodes as items: slot (row, place) of edge ``edges[i]``
    from node ``sources[i]`` into scored node ``rows[i]``; M scored nodes, at most N neighbours."""

    rows: Tensor
    places: Tensor
    sources: Tensor
    edges: Tensor
    valid: Tensor  # (M, N) bool


def neighbours(batch: Data) -> Neighbours:
    """The scored nodes' in-neighbours (self loops left out: every layer adds them anyway)."""
    source, target = batch.edge_index
    centres = batch.target_mask.nonzero().flatten()
    row_of = torch.full((batch.num_nodes,), -1, dtype=torch.long, device=source.device)
    row_of[centres] = torch.arange(len(centres), device=source.device)
    edges = ((row_of[target] >= 0) & (source != target)).nonzero().flatten()
    rows = row_of[target[edges]]
    order = rows.argsort(stable=True)
    edges, rows = edges[order], rows[order]
    counts = torch.bincount(rows, minlength=len(centres))
    starts = counts.cumsum(0) - counts
    places = torch.arange(len(rows), device=rows.device) - starts[rows]
    valid = torch.zeros(len(centres), int(counts.max()) if len(rows) else 1, dtype=torch.bool, device=rows.device)
    valid[rows, places] = True
    return Neighbours(rows, places, source[edges], edges, valid)


def coefficients_of(batch: Data, record_weights: tuple[Tensor, Tensor], slots: Neighbours) -> Tensor:
    """(M, N) attention coefficients of the neighbour edges (heads averaged), 0 at empty places."""
    edge_index, alpha = record_weights
    alpha = alpha.float().mean(-1) if alpha.dim() == 2 else alpha.float()
    n = batch.num_nodes
    keys = edge_index[0] * n + edge_index[1]
    order = keys.argsort()
    wanted = batch.edge_index[0, slots.edges] * n + batch.edge_index[1, slots.edges]
    found = order[torch.searchsorted(keys[order], wanted).clamp(max=len(keys) - 1)]
    weights = torch.zeros(slots.valid.shape, device=alpha.device)
    weights[slots.rows, slots.places] = torch.where(keys[found] == wanted, alpha[found], 0.0)
    return weights


def evaluated_nodes(mask: Tensor) -> Tensor:
    """The ids of up to :data:`EVALUATED_NODES` of the nodes in ``mask`` (N,) bool, evenly spaced."""
    scored = mask.nonzero().flatten()
    return scored[torch.linspace(0, len(scored) - 1, min(EVALUATED_NODES, len(scored))).round().long()]


def agreement_view(name: str, batch: Data, weights: tuple[Tensor, Tensor]) -> GoldView:
    """The scored nodes' coefficients ``weights`` = (edge_index, alpha) over their in-neighbours
    (heads averaged, self loops left out, renormalised) against label agreement: a neighbour of
    the node's own class is gold."""
    slots = neighbours(batch)
    centres = batch.target_mask.nonzero().flatten()
    same = torch.zeros(slots.valid.shape, dtype=torch.bool, device=slots.valid.device)
    same[slots.rows, slots.places] = batch.y[slots.sources] == batch.y[centres][slots.rows]
    coefficients = coefficients_of(batch, weights, slots)
    coefficients = coefficients / coefficients.sum(-1, keepdim=True).clamp(min=1e-12)
    return GoldView(
        name, coefficients.unsqueeze(1), same.unsqueeze(1), slots.valid.unsqueeze(1), slots.valid.any(-1, keepdim=True)
    )


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

    Evaluation (``python -m framework evaluate``): up to 128 scored nodes, each in its own
    subgraph (its receptive field, so that erasing one node's neighbours changes no other
    decision); the items of a node are its in-neighbours, weighed by the last attention layer
    (heads averaged), erased by dropping their edges into it. The known structure the
    attention is compared with is label agreement: attention correctness is the mass on
    neighbours of the node's own class, against their share (uniform attention), per layer.

    Args:
        num_classes: classes K.
        image_node: the node whose neighbourhood is drawn (its id in the whole graph).
        max_drawn_neighbours: neighbours drawn at most (the strongest ones).
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
    """

    def __init__(
        self,
        num_classes: Optional[ClassCount] = None,
        image_node: NonNegativeInt = 0,
        max_drawn_neighbours: PositiveInt = 24,
        label_smoothing: Fraction = 0.0,
    ) -> None:
        super().__init__(num_classes, label_smoothing=label_smoothing)
        self.image_node, self.max_drawn_neighbours = image_node, max_drawn_neighbours

    def check(self, model: nn.Module, data: Any) -> None:
        """The model must read the graph's features and both must know all its classes."""
        graph = getattr(data, "graph", None)
        if graph is None:
            return
        features, classes = graph.num_features, int(graph.y.max()) + 1
        given = getattr(model, "in_channels", features)
        if given != features:
            raise ConfigError(
                f"model.in_channels is {given} but the graph's nodes have {features} features: "
                f"set model.in_channels={features}"
            )
        for key, value in (
            ("task.num_classes", self.num_classes),
            ("model.num_classes", getattr(model, "num_classes", classes)),
        ):
            if value < classes:
                raise ConfigError(
                    f"{key} is {value} but the graph's labels go up to {classes - 1}: set {key}={classes}"
                )
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
        sink.rows(
            "predictions.csv",
            ["node", "class", "score"],
            zip(prediction["node"].tolist(), label.tolist(), (f"{s:.6f}" for s in score.tolist())),
        )

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
            pictures.append(
                draw_neighbourhood(
                    self.image_node,
                    sources if ids is None else ids[sources].cpu(),
                    coefficients,
                    title=f"{name}: node {self.image_node} attending its neighbours",
                    max_neighbours=self.max_drawn_neighbours,
                )
            )
        return {"neighbourhood_attention": pictures} if pictures else {}

    def _local_index(self, batch: Data) -> Optional[int]:
        """The drawn node's index in the batch (None: a sampled batch without it)."""
        if "n_id" in batch:
            where = (batch.n_id == self.image_node).nonzero()
            return int(where[0]) if len(where) else None
        if self.image_node >= batch.num_nodes:
            raise ConfigError(f"task.image_node={self.image_node}, but the graph has {batch.num_nodes} nodes")
        return self.image_node

    # ------------------------------------------------------------------ evaluation hooks

    def evaluation_batch(self, model: nn.Module, batch: Data) -> Data:
        """Up to 128 scored nodes (evenly spaced), each with its receptive field (as many hops as
        the model has layers) as a separate subgraph, joined into one batch."""
        hops = len(getattr(model, "layers", ())) or 2
        graphs = []
        for node in evaluated_nodes(batch.target_mask).tolist():
            subset, edge_index, mapping, _ = k_hop_subgraph(
                node, hops, batch.edge_index, relabel_nodes=True, num_nodes=batch.num_nodes
            )
            mask = torch.zeros(len(subset), dtype=torch.bool, device=subset.device)
            mask[mapping] = True
            graphs.append(Data(x=batch.x[subset], edge_index=edge_index, y=batch.y[subset], target_mask=mask))
        return Batch.from_data_list(graphs)

    def _layers(
        self, model: nn.Module, batch: Data, watched: Optional[Watched] = None
    ) -> dict[str, tuple[Tensor, Tensor]]:
        """Every attention layer's (edge_index, alpha) in one decision (of the pass ``watched``, where given)."""
        return {
            name: records[-1].weights
            for name, records in (watched or self.watch(model, batch)).maps.items()
            if records and isinstance(records[-1].weights, tuple)
        }

    def item_attention(self, model: nn.Module, batch: Data) -> Optional[ItemAttention]:
        """The last attention layer's coefficients of each scored node's in-neighbours."""
        layers = self._layers(model, batch)
        if not layers:
            return None
        name, weights = list(layers.items())[-1]
        slots = neighbours(batch)
        coefficients = coefficients_of(batch, weights, slots)
        return ItemAttention(coefficients / coefficients.sum(-1, keepdim=True).clamp(min=1e-12), slots.valid, (name,))

    def erase_items(self, batch: Data, erased: Tensor) -> Data:
        """The edges of the ``erased`` neighbours into their scored node dropped."""
        slots = neighbours(batch)
        drop = slots.edges[erased[slots.rows, slots.places]]
        keep = torch.ones(batch.edge_index.shape[1], dtype=torch.bool, device=drop.device)
        keep[drop] = False
        erased_batch = copy.copy(batch)
        erased_batch.edge_index = batch.edge_index[:, keep]
        return erased_batch

    def item_forward(self, model: nn.Module, batch: Data) -> Optional[ItemForward]:
        """The neighbours' input features (M, N, F) and the scored nodes' logits as their function."""
        slots = neighbours(batch)
        vectors = batch.x.new_zeros(*slots.valid.shape, batch.x.shape[-1])
        vectors[slots.rows, slots.places] = batch.x[slots.sources]
        size = len(slots.valid)

        def forward(given: Tensor) -> Tensor:
            outputs = []
            for start in range(0, len(given), size):
                part = given[start : start + size]
                x = batch.x.index_put((slots.sources,), part[slots.rows, slots.places].to(batch.x.dtype))
                outputs.append(model(x, batch.edge_index)[batch.target_mask])
            return torch.cat(outputs)

        return ItemForward(vectors, forward)

    def gold_views(self, model: nn.Module, batch: Data, watched: Optional[Watched] = None) -> list[GoldView]:
        """Per attention layer, the scored nodes' coefficients over their neighbours (heads
        averaged) against label agreement (a neighbour of the node's own class); none trained."""
        return [
            agreement_view(f"layer{index} ({name}) vs same-class neighbours", batch, weights)
            for index, (name, weights) in enumerate(self._layers(model, batch, watched).items())
        ]
