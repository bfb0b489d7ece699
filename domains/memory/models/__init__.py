"""Memory networks for question answering: MemN2N and KV-MemNN, each hop the core's memory block
(``attention: memory_read``) over sentence features with temporal encoding (``encoding.py``); the
dynamic memory network (``episodic_memory``), the neural Turing machine (``ntm``) and a GRU read by a
Hopfield layer (``hopfield``)."""

from .dmn import DMN
from .hopfield import HopfieldReader
from .kvmemnn import KVMemNN
from .matching import MatchingReader
from .memn2n import MemN2N
from .ntm import NTM
from .reader import MemoryReader

__all__ = ["DMN", "HopfieldReader", "KVMemNN", "MatchingReader", "MemN2N", "MemoryReader", "NTM"]
