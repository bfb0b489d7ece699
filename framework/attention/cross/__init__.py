"""Cross attention: a query attends to keys and values of another input (kind ``cross``).

The general attention model of the surveys lives here: score functions x distribution
functions, composed by :class:`Attention` (``attention``, whose catalogue presets ``additive``,
``dot``, ``multi_head`` ... are one setting each); beside it the cross blocks built on it or
beside it: co-attention (``parallel_co_attention``, ``alternating_co_attention``,
``interactive_co_attention``, ``multi_grained_co_attention``, ``attention_over_attention``),
``rotatory`` attention, ``attention_via_attention``, Luong's ``local_p``, ``area`` attention,
the recurrent alignments (``location_aware``, ``gru_gated``, the ``monotonic`` family),
``pointer`` networks and the ``pointer_generator``, and the Set Transformer's ``mab``.
Importing the package registers them all.
"""

from ..masks import causal_mask
from .alignment import RecurrentAlignment
from .area import AreaAttention
from .attention import Attention
from .attention_over_attention import AttentionOverAttention
from .attention_via_attention import AttentionViaAttention
from .co_attention import AlternatingCoAttention, ParallelCoAttention
from .distribution import DISTRIBUTIONS, Distribution
from .gru_gated import GRUGatedAttention
from .interactive_co_attention import InteractiveCoAttention, MultiGrainedCoAttention
from .local_p import LuongLocalAttention
from .location_aware import LocationAwareAttention
from .monotonic import MonotonicAttention
from .pointer import PointerAttention, PointerGenerator
from .rotatory import RotatoryAttention
from .score import SCORES, Score
from .set_attention import MultiheadAttentionBlock

__all__ = [
    "DISTRIBUTIONS",
    "SCORES",
    "AlternatingCoAttention",
    "AreaAttention",
    "Attention",
    "AttentionOverAttention",
    "AttentionViaAttention",
    "Distribution",
    "GRUGatedAttention",
    "InteractiveCoAttention",
    "LocationAwareAttention",
    "LuongLocalAttention",
    "MonotonicAttention",
    "MultiGrainedCoAttention",
    "MultiheadAttentionBlock",
    "ParallelCoAttention",
    "PointerAttention",
    "PointerGenerator",
    "RecurrentAlignment",
    "RotatoryAttention",
    "Score",
    "causal_mask",
]
