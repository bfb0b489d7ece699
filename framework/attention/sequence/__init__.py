"""Sequence attention: the tokens of a sequence attend to each other, (B, N, D) -> (B, N, D)
(kind ``sequence``): multi-head self-attention (``mhsa``) and local windows (``local``); the
efficient and structured variants: low-rank keys (``linformer``), random features
(``performer``), fixed sparse patterns (``sparse_strided``, ``sparse_fixed``), a learned span
(``adaptive_span``), synthetic weights (``synthesizer_dense``, ``synthesizer_random``) and
segment recurrence (``transformer_xl``); the Set Transformer's ``sab`` and ``isab``.
Importing the package registers them all."""

from .adaptive_span import AdaptiveSpanAttention, span_loss
from .linformer import Linformer
from .local import LocalAttention, band_mask
from .performer import Performer
from .self_attention import MultiHeadSelfAttention
from .set_attention import InducedSetAttentionBlock, SetAttentionBlock
from .sparse import SparseAttention
from .synthesizer import Synthesizer
from .transformer_xl import TransformerXLAttention

__all__ = [
    "AdaptiveSpanAttention",
    "InducedSetAttentionBlock",
    "Linformer",
    "LocalAttention",
    "MultiHeadSelfAttention",
    "Performer",
    "SetAttentionBlock",
    "SparseAttention",
    "Synthesizer",
    "TransformerXLAttention",
    "band_mask",
    "span_loss",
]
