"""Memory networks for question answering: MemN2N and KV-MemNN, each hop the core's memory block
(``attention: memory_read``) over sentence features with temporal encoding (``encoding.py``)."""

from .kvmemnn import KVMemNN
from .memn2n import MemN2N
from .reader import MemoryReader

__all__ = ["KVMemNN", "MemN2N", "MemoryReader"]
