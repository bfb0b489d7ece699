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

from typing import Any, Callable

import torch
from torch import nn

from ..attention import capture
from ..attention.statistics import row_statistics
from .table import Row

#: The statistics also reported per head.
PER_HEAD = ("entropy_ratio", "max_weight")


def map_rows(model: nn.Module, forward: Callable[[], Any], probes: int = 64, top_k: int = 5) -> tuple[list[Row], dict[str, Any]]:
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
