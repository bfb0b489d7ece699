"""Memory attention: a query reads a memory of slots in several hops (kind ``memory``).
Importing registers the block."""

from .read import UPDATES, MemoryRead

__all__ = ["UPDATES", "MemoryRead"]
