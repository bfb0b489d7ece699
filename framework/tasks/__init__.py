"""Tasks: loss, metrics and how a batch becomes predictions, shared by every domain."""

from .base import Step, Task, call_model, inputs_of, split_batch
from .classification import Classification

__all__ = ["Classification", "Step", "Task", "call_model", "inputs_of", "split_batch"]
