"""A PyTorch Lightning framework for attention mechanisms across domains.

``framework.attention`` is the block library; ``TaskModule`` runs any model with any
``framework.tasks.Task``; ``python -m framework`` is the command line.

The names below are imported on first use, so ``import framework.attention`` loads the block
library alone (torch and what the blocks need), not Lightning.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import attention, tasks
    from .task_module import TaskModule

__all__ = ["TaskModule", "attention", "tasks"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "TaskModule":
        return importlib.import_module(".task_module", __name__).TaskModule
    if name in ("attention", "tasks"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
