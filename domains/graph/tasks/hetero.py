"""Node classification on meta-path graphs (HAN): cross-entropy and accuracy on the scored nodes,
pictures of both levels of attention (meta-paths, and one node's meta-path neighbours), the
evaluation's hooks at both levels, and the attention-training families on the semantic level
(against the planted meta-paths of generated data)."""

from __future__ import annotations

import copy
from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch, Data, HeteroData

from framework.attention import capture
from framework.errors import ConfigError
from framework.evaluation.protocol import GoldView, ItemAttention, Watched
from framework.tasks import Classification
from framework.values import ClassCount, Fraction, NonNegativeFloat, NonNegativeInt, PositiveInt

from ..pictures import metapath_attention, node_coefficients
from .nodes import NodeClassification, agreement_view, evaluated_nodes

#: Per attention layer: the node-level (edge_index, alpha) of every meta-path, and the semantic weights (P,).
Levels = dict[str, tuple[list[tuple[Tensor, Tensor]], Tensor]]


def target_inputs(batch: HeteroData) -> tuple[str, Tensor, dict[str, Tensor]]:
    """The node type a batch scores (the one with a ``target_mask``), its features (N, F) and its
    meta-path edges by name, {relation: (2, E)}, as ``data/hetero.py`` builds the batches."""
    node = next(t for t in batch.node_types if "target_mask" in batch[t])
    edges = {
        relation: batch[source, relation, target].edge_index
        for source, relation, target in batch.edge_types
        if source == target == node
    }
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

    Evaluation (``python -m framework evaluate``): up to 128 scored nodes, each scored in a copy
    of the whole graph of its own (the semantic weights average over all the graph's nodes, so
    a subgraph would change them; in the joined copies they are the graph's). The items of a
    node are the meta-paths, weighed by the last layer's semantic attention (over the meta-paths
    along which the node has neighbours), erased by dropping the node's incoming edges along
    them; attribution methods are not applicable, the meta-paths' vectors being internal to
    the block. The known structure is label agreement, as for GAT: per layer and meta-path, the
    node-level attention over the meta-path neighbours against their share of the node's class;
    on data with planted gold meta-paths (the batches' ``gold`` (N, P), :class:`PlantedAuthors`'
    APA) also per layer the semantic weights against them (the gold evidence of the items, which
    the plausibility test scores too).

    The attention-training families (:mod:`framework.tasks.attention_training`) train the last
    attention layer's semantic weights beta (P,), the same for every scored node, against the
    planted gold meta-paths (the trained one of :meth:`gold_views`): ``attention_supervision``
    adds lambda x the cross-entropy of beta against the gold meta-paths (uniform over them),
    ``decouple_attention`` mu x -log(1 - m), m beta's mass on them, averaged over the scored
    nodes; ``random_attention`` draws both levels of every ``han`` block at random (node-level
    coefficients per node, semantic weights per call).

    Args:
        num_classes: classes K (default: the data's ``num_classes``, filled by the command line).
        image_node: the node whose neighbourhoods are drawn.
        max_drawn_neighbours: neighbours drawn at most per meta-path (the strongest ones).
        label_smoothing: as in ``torch.nn.functional.cross_entropy``.
        attention_supervision, decouple_attention, random_attention: the families above (off by
            default; the first two need data with gold meta-paths).
    """

    gold_data = "meta-path graphs with planted gold meta-paths (domains.graph.PlantedAuthors with APA)"
    gold_model = "a model with semantic attention (model.attention=han)"

    def __init__(
        self,
        num_classes: Optional[ClassCount] = None,
        image_node: NonNegativeInt = 0,
        max_drawn_neighbours: PositiveInt = 16,
        label_smoothing: Fraction = 0.0,
        attention_supervision: NonNegativeFloat = 0.0,
        decouple_attention: NonNegativeFloat = 0.0,
        random_attention: bool = False,
    ) -> None:
        super().__init__(
            num_classes,
            label_smoothing=label_smoothing,
            attention_supervision=attention_supervision,
            decouple_attention=decouple_attention,
            random_attention=random_attention,
        )
        self.image_node, self.max_drawn_neighbours = image_node, max_drawn_neighbours

    def split(self, batch: HeteroData) -> tuple[HeteroData, Tensor]:
        node = target_inputs(batch)[0]
        return batch, batch[node].y[batch[node].target_mask]

    def run_model(self, model: nn.Module, batch: HeteroData) -> Tensor:
        """Logits (M, K) of the M scored nodes only."""
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
            views = [
                (relation, *node_coefficients(edge_index, alpha, self.image_node))
                for relation, (edge_index, alpha) in zip(edges, node_level)
            ]
            if views:
                pictures.append(
                    metapath_attention(
                        self.image_node,
                        semantic[0] if semantic else None,
                        views,
                        f"{name}: {node} node {self.image_node}, heads averaged",
                        self.max_drawn_neighbours,
                    )
                )
        return {"metapath_attention": pictures} if pictures else {}

    # ------------------------------------------------------------------ evaluation hooks

    def evaluation_batch(self, model: nn.Module, batch: HeteroData) -> Batch:
        """Up to 128 scored nodes (evenly spaced), each the one scored node of a copy of the
        graph, the copies joined into one batch: erasing one node's meta-paths changes no other
        node's neighbourhood, and every copy sees the graph's semantic weights."""
        node = target_inputs(batch)[0]
        copies = []
        for index in evaluated_nodes(batch[node].target_mask).tolist():
            one = copy.copy(batch)
            one[node].target_mask = torch.zeros_like(batch[node].target_mask)
            one[node].target_mask[index] = True
            copies.append(one)
        return Batch.from_data_list(copies)

    def _levels(self, model: nn.Module, batch: HeteroData, watched: Optional[Watched] = None) -> Levels:
        """Both levels of attention of every attention layer (module name) in one decision (of
        the pass ``watched``, where given)."""
        levels = {}
        for name, records in (watched or self.watch(model, batch)).maps.items():
            node_level = [r.weights for r in records if isinstance(r.weights, tuple)]
            semantic = [r.weights for r in records if not isinstance(r.weights, tuple)]
            if node_level and semantic:
                levels[name] = (node_level, semantic[-1])
        return levels

    @staticmethod
    def _rows(batch: HeteroData) -> Tensor:
        """(N,) the row of each scored node among the scored ones, -1 for the others."""
        mask = batch[target_inputs(batch)[0]].target_mask
        rows = torch.full(mask.shape, -1, dtype=torch.long, device=mask.device)
        rows[mask] = torch.arange(int(mask.sum()), device=mask.device)
        return rows

    def _per_node(self, batch: HeteroData, semantic: Tensor) -> tuple[Tensor, Tensor]:
        """Semantic weights (P,) as each scored node's (B, P), renormalised over the meta-paths
        along which it has neighbours, and those meta-paths (B, P) bool."""
        rows, edges = self._rows(batch), target_inputs(batch)[2]
        size = int((rows >= 0).sum())
        valid = torch.stack(
            [torch.bincount(rows[e[1]][rows[e[1]] >= 0], minlength=size) > 0 for e in edges.values()], 1
        )
        weights = semantic.float() * valid
        return weights / weights.sum(-1, keepdim=True).clamp(min=1e-12), valid

    def item_attention(self, model: nn.Module, batch: HeteroData) -> Optional[ItemAttention]:
        """The last attention layer's semantic weights (B, P) of the meta-paths, the same for
        every node, renormalised over the meta-paths along which the node has neighbours."""
        levels = self._levels(model, batch)
        if not levels:
            return None
        name, (_, semantic) = list(levels.items())[-1]
        return ItemAttention(*self._per_node(batch, semantic), (name,))

    def gold_attention(self, batch: HeteroData) -> Optional[Tensor]:
        """The scored nodes' gold meta-paths (B, P) bool, where the data plants them (``gold``)."""
        node = target_inputs(batch)[0]
        return batch[node].gold[batch[node].target_mask] if "gold" in batch[node] else None

    def erase_items(self, batch: HeteroData, erased: Tensor) -> HeteroData:
        """The incoming edges of each scored node along its ``erased`` (B, P) meta-paths dropped."""
        node, _, edges = target_inputs(batch)
        rows, dropped = self._rows(batch), copy.copy(batch)
        for path, (relation, edge_index) in enumerate(edges.items()):
            into = rows[edge_index[1]]
            drop = (into >= 0) & erased[into.clamp(min=0), path]
            dropped[node, relation, node].edge_index = edge_index[:, ~drop]
        return dropped

    def gold_views(self, model: nn.Module, batch: HeteroData, watched: Optional[Watched] = None) -> list[GoldView]:
        """Per attention layer: for every meta-path, the scored nodes' node-level coefficients
        over their meta-path neighbours (heads averaged, themselves left out) against label
        agreement; then, where the data plants gold meta-paths, the semantic weights (one query
        per node over the P meta-paths, as :meth:`item_attention` gives them) against those,
        the last layer's trained."""
        node, x, edges = target_inputs(batch)
        y, mask = batch[node].y, batch[node].target_mask
        gold = self.gold_attention(batch)
        levels = self._levels(model, batch, watched)
        views = []
        for index, (name, (node_level, semantic)) in enumerate(levels.items()):
            views += [
                agreement_view(
                    f"layer{index} ({name}) {relation} vs same-class neighbours",
                    Data(edge_index=edges[relation], y=y, target_mask=mask, num_nodes=len(x)),
                    weights,
                )
                for relation, weights in zip(edges, node_level)
            ]
            if gold is not None:
                weights, valid = self._per_node(batch, semantic)
                views.append(
                    GoldView(
                        f"layer{index} ({name}) semantic vs planted meta-paths",
                        weights[:, None],
                        gold[:, None],
                        valid[:, None],
                        (gold & valid).any(-1, keepdim=True),
                        trained=index == len(levels) - 1,
                    )
                )
        return views
