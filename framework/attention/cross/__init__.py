"""Cross attention: a query attends to keys and values of another input (kind ``cross``).

The general attention model of the surveys lives here: score functions x distribution
functions, composed by :class:`Attention` (whose catalogue presets ``additive``, ``dot``,
``multi_head`` ... are one setting each); beside it the cross blocks built on it:
co-attention (parallel, alternating), rotatory attention and Luong's local-p.
Importing the package registers them all.
"""

from .attention import Attention, causal_mask
from .co_attention import AlternatingCoAttention, ParallelCoAttention
from .distribution import DISTRIBUTIONS, Distribution
from .local_p import LuongLocalAttention
from .rotatory import RotatoryAttention
from .score import SCORES, Score
from .set_attention import MultiheadAttentionBlock

__all__ = ["DISTRIBUTIONS", "SCORES", "AlternatingCoAttention", "Attention", "Distribution", "LuongLocalAttention",
           "MultiheadAttentionBlock", "ParallelCoAttention", "RotatoryAttention", "Score", "causal_mask"]
