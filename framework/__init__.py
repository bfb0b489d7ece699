"""A PyTorch Lightning framework for attention mechanisms across domains.

``framework.attention`` is the block library; ``TaskModule`` runs any model with any
``framework.tasks.Task``; ``python -m framework`` is the command line.
"""

from . import attention, tasks
from .task_module import TaskModule

__all__ = ["TaskModule", "attention", "tasks"]
__version__ = "0.1.0"
