"""Blocks of queries that attend a window of keys around them: what segment-recurrent
(Transformer-XL) and span-limited (adaptive span) attention share.

A sequence of T = S L positions is cut into S blocks of L queries; block s attends the keys
from ``before`` positions ahead of it to ``after`` positions past it, K = before + L + after
keys, so scores are (S, L, K) per head instead of (T, T): linear in the length.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def windows(t: Tensor, block: int, before: int, after: int) -> Tensor:
    """(..., S L, d) -> (..., S, K, d): for each block of ``block`` rows, the rows from ``before``
    ahead of it to ``after`` past it (zeros beyond the ends)."""
    padded = F.pad(t, (0, 0, before, after))
    return padded.unfold(-2, before + block + after, block).transpose(-1, -2)


def window_flags(valid: Tensor, block: int, before: int, after: int, outside: bool = False) -> Tensor:
    """(B, S L) boolean -> (B, S, K), as :func:`windows` (``outside`` beyond the ends)."""
    return F.pad(valid, (before, after), value=outside).unfold(-1, before + block + after, block)


def window_mask(
    allowed: Tensor, n: int, block: int, blocks: int, before: int, after: int, ahead: bool = False
) -> Tensor:
    """The entries of a boolean mask ``allowed`` (B|1, h|1, N, N) (from
    :func:`~framework.attention.masks.sequence_mask`) for each block's queries and window of
    keys: (B|1, h|1, S, L, K). Keys past the sequence are False; keys ahead of its start are
    ``ahead`` (True for a memory the mask does not cover)."""
    total = blocks * block
    grid = F.pad(allowed, (0, total - n + after, 0, total - n), value=False)
    grid = F.pad(grid, (before, 0), value=ahead)  # key column c of block s sits at s * block + c
    start = torch.arange(blocks, device=allowed.device)[:, None, None] * block
    rows = start + torch.arange(block, device=allowed.device)[None, :, None]  # (S, L, 1)
    cols = start + torch.arange(before + block + after, device=allowed.device)[None, None, :]  # (S, 1, K)
    return grid[..., rows, cols]


def windows_to_dense(weights: Tensor, n: int, before: int) -> Tensor:
    """(B, h, S, L, K) weights of the blocks -> (B, h, N, N) over the sequence's positions (zero
    outside each window; weights on keys ahead of the start, such as a memory, left out)."""
    b, h, blocks, block, keys = weights.shape
    dense = weights.new_zeros(b, h, blocks, block, (blocks - 1) * block + keys)
    for s in range(blocks):
        dense[:, :, s, :, s * block : s * block + keys] = weights[:, :, s]
    return dense.flatten(2, 3)[:, :, :n, before : before + n]
