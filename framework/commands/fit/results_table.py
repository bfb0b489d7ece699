"""The table ``validate`` and ``test`` print when they end, in the task's reading order.

Lightning's evaluation loop prints it (``_EvaluationLoop._print_results``, when the loop is
``verbose``), its rows sorted by name: a model with attention statistics showed dozens of
``attention/*`` rows before ``val/acc``. :func:`install` gives a trainer's validate and test
loops :func:`print_results` instead, whose rows follow :meth:`~framework.tasks.Task.reading_order`:
the task's metrics, its losses, anything else, the attention statistics.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from lightning.pytorch import Trainer
from torch import Tensor

from ...tasks import Task

#: The suffix Lightning gives a metric of the i-th of several dataloaders.
DATALOADER_SUFFIX = "/dataloader_idx_"


def install(trainer: Trainer, task: Task) -> None:
    """The trainer's validate and test loops print their table with :func:`print_results`, in ``task``'s order."""
    for loop in (trainer.validate_loop, trainer.test_loop):
        loop._print_results = partial(print_results, order=task.reading_order)


def print_results(results: list[Mapping[str, Any]], stage: str, order: Callable[[Iterable[str]], list[str]]) -> None:
    """Print the metrics of ``results`` (one mapping of logged name -> value per dataloader) as a
    table: a row per metric in ``order``, a column per dataloader."""
    columns = [_flat(result) for result in results]
    names = order({name for column in columns for name in column})
    if not names:
        return
    headers = [f"{stage.capitalize()} metric", *(f"DataLoader {i}" for i in range(len(columns)))]
    rows = [[name, *(_number(column.get(name)) for column in columns)] for name in names]
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    line = _rule() * min(sum(widths) + 4 * (len(widths) - 1), shutil.get_terminal_size((120, 30)).columns)
    lines = [line, _row(headers, widths), line, *(_row(row, widths) for row in rows), line]
    print("\n".join(lines))


def _flat(result: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{name: value}`` of one dataloader's results: nested mappings joined by ``:`` (as Lightning
    shows them), the dataloader suffix dropped."""
    flat: dict[str, Any] = {}
    for key, value in result.items():
        name = prefix + key.split(DATALOADER_SUFFIX)[0]
        flat.update(_flat(value, name + ":") if isinstance(value, Mapping) else {name: value})
    return flat


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Tensor):
        value = value.item() if value.numel() == 1 else value.tolist()
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _row(cells: list[str], widths: list[int]) -> str:
    name, *values = cells
    return "    ".join([f"{name:<{widths[0]}}", *(f"{v:>{w}}" for v, w in zip(values, widths[1:]))]).rstrip()


def _rule() -> str:
    """A box-drawing rule where the output can encode it, else a hyphen."""
    try:
        "─".encode(sys.stdout.encoding or "ascii")
    except UnicodeEncodeError:
        return "-"
    return "─"
