"""Cases of the efficient and structured self-attention blocks: several heads, and the options and
lengths that make each one's structure show (the sparse-distribution presets entmax15,
adaptive_entmax and quasi_attention are cross blocks, whose generic case fits them)."""

from __future__ import annotations

from tests.attention.cases import Case, generic

CASES: dict[str, Case] = {
    "linformer": generic("linformer", num_heads=2, rank=3, max_len=8),
    "performer": generic("performer", num_heads=2, features=6),
    "sparse_strided": generic("sparse_strided", length=7, num_heads=2, stride=2),
    "sparse_fixed": generic("sparse_fixed", length=7, num_heads=2, stride=3, summary=1, causal=True),
    "adaptive_span": generic("adaptive_span", num_heads=2, max_span=3, ramp=1),
    "synthesizer_dense": generic("synthesizer_dense", num_heads=2, max_len=8),
    "synthesizer_random": generic("synthesizer_random", num_heads=2, max_len=8, rank=2),
    "transformer_xl": generic("transformer_xl", length=7, num_heads=2, segment=3),
}
