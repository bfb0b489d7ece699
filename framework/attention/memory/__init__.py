"""Memory attention: a query reads a memory of slots (kind ``memory``): the multi-hop read of
memory networks (``memory_read``), modern Hopfield retrieval (``hopfield``), neural Turing machine
heads (``ntm``) and the episodic memory of dynamic memory networks (``episodic_memory``).
Importing registers the blocks."""

from .episodic import EPISODES, AttentionGRU, EpisodicMemory
from .hopfield import HopfieldLayer
from .ntm import NTMHeads, NTMStep
from .read import UPDATES, MemoryRead

__all__ = [
    "EPISODES",
    "UPDATES",
    "AttentionGRU",
    "EpisodicMemory",
    "HopfieldLayer",
    "MemoryRead",
    "NTMHeads",
    "NTMStep",
]
