"""The maps test of ``evaluate``: every block's attention on a test batch, from probe rows.

One forward pass of the first test batch under ``capture(model, probes=P)`` (the exact rows of P
probe queries per call, on the blocks' own fused paths, at O(P x keys) memory: a non-local
block at 128 x 256 or criss-cross at 97 x 97 costs no N x N map) gives, per block (and call),
the statistics of :mod:`framework.attention.statistics` as table rows (heads averaged; the
entropy ratio and the largest weight also per head, the figures that show a collapse), and
each block's picture, ``evaluation/maps/<block>`` (where the probe nearest the middle looks,
for a map over pixels; the probe rows over the keys, for a sequence).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Optional

import torch
from torch import nn

from ..attention import capture
from ..attention.statistics import RowStatistics, row_statistics
from .measures import attention_correctness
from .table import Row

#: The statistics also reported per head.
PER_HEAD = ("entropy_ratio", "max_weight")


def map_rows(
    model: nn.Module, forward: Callable[[], Any], probes: int = 64, top_k: int = 5
) -> tuple[list[Row], dict[str, Any]]:
    """Rows and pictures of every block's probe rows in one ``forward()`` of the model."""
    with torch.no_grad(), capture(model, probes=probes) as rows:
        forward()
    modules = dict(model.named_modules())
    found, drawn = [], {}
    for name, records in rows.items():
        block = modules.get(name, model)
        for call, record in enumerate(records):
            label = name if len(records) == 1 else f"{name} call {call + 1}"
            stats = row_statistics(record, top_k)
            if stats is not None:
                setting = f"{len(record.probes)} probes" if record.probes is not None else "all queries"
                for measure, values in stats.values().items():
                    found.append(Row("maps", label, setting, measure, float(values.nanmean())))
                    if measure in PER_HEAD and stats.heads > 1:
                        found += [Row("maps", label, f"head {h}", measure, float(v)) for h, v in enumerate(values)]
            picture = block.weights_picture(record, f"{label}, first test example")
            if picture is not None:
                drawn[f"maps/{label}"] = picture
    return found, drawn


def probe_statistics(
    model: nn.Module,
    task: Any,
    batch: Any,
    *,
    probes: int,
    blocks: list[str],
    top_k: int,
    rows: Optional[capture] = None,
) -> dict[str, RowStatistics]:
    """The statistics of every record that weighs a key grid, by the block's module name
    (``<name>/call<k>`` for a block called more than once: recurrence, hops), from the capture
    ``rows`` of a step already run, else from one validation step of ``batch`` under a capture
    with ``probes``."""
    if rows is None:
        with torch.no_grad(), capture(model, *blocks, probes=probes) as rows:
            task.step(model, batch, "val")
    found = {}
    for name, records in rows.items():
        for call, record in enumerate(records):
            stats = row_statistics(record, top_k)
            if stats is not None:
                found[name if len(records) == 1 else f"{name}/call{call + 1}"] = stats
    return found


def gold_masses(model: nn.Module, task: Any, batch: Any) -> dict[str, float]:
    """``attention/gold/<view>/mass``: the weight mass on the gold keys (attention correctness)
    of each of the task's gold views of ``batch`` with boolean gold, over the queries with gold."""
    with torch.no_grad():
        views = task.gold_views(model, batch)
    masses = {}
    for view in views:
        if view.gold.dtype != torch.bool:
            continue  # a graded reference (graphs): for rank correlation, not a mass
        mass = float(attention_correctness(view.weights.float(), view.gold & view.keys.bool(), view.queries))
        if math.isfinite(mass):
            masses[f"attention/gold/{view.name}/mass"] = mass
    return masses
