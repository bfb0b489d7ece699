"""The masks a block attends with: boolean, True = may attend.

A sequence block checks its inputs and gets the one mask it attends with from
:func:`sequence_mask`; the general :class:`~framework.attention.Attention` folds its own masks
(M queries, N keys) together with :func:`combine`, the rule both follow::

    allowed[b, h, i, j] = mask[b, j] & attn_mask[b, h, i, j] & structure[i, j] & (j <= i if causal)

each part broadcast to (B, h, M, N) from the shape it comes in. A query whose keys are all
masked keeps a row of False: the distributions give it all-zero weights, the sequence blocks
a zero context.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import lru_cache, reduce
from typing import Optional

import torch
from torch import Tensor

from .base import AttentionBlock, ShapeError


@lru_cache(maxsize=32)
def causal_mask(m: int, n: int, device: torch.device) -> Tensor:
    """(m, n) boolean mask, True where query i may attend key j <= i (built once per size).

    Built outside inference mode: a cached inference tensor would break a later backward.
    """
    with torch.inference_mode(False):
        return torch.ones(m, n, dtype=torch.bool, device=device).tril()


def combine(
    block: str,
    key_padding_mask: Optional[Tensor],
    attn_mask: Optional[Tensor],
    m: int,
    n: int,
    *structure: Optional[Tensor],
) -> Optional[Tensor]:
    """The padding of the keys, an explicit mask and structural masks and-ed into one boolean
    mask, (B|1, h|1, M|1, N); None when every part is None.

    ``key_padding_mask`` (B, N), True = a real key, enters as (B, 1, 1, N); ``attn_mask``
    (M, N), (B, M, N) or (B, h, M, N), True = may attend, as (1|B, 1|h, M, N) (a boolean
    one only: otherwise a ``ValueError`` naming ``block``); each of ``structure`` (a band,
    the causal triangle, a pattern; None parts are left out) as it is, broadcasting to
    (B, h, M, N).
    """
    parts = []
    if key_padding_mask is not None:
        parts.append(key_padding_mask.bool()[:, None, None, :])
    if attn_mask is not None:
        if attn_mask.dtype != torch.bool:
            raise ValueError(f"{block}: attn_mask must be boolean (True = may attend), got {attn_mask.dtype}")
        parts.append(attn_mask if attn_mask.dim() == 4 else attn_mask.reshape(-1, 1, m, n))
    parts += [part for part in structure if part is not None]
    return reduce(operator.and_, parts) if parts else None


def sequence_mask(
    block: AttentionBlock,
    x: Tensor,
    mask: Optional[Tensor] = None,
    attn_mask: Optional[Tensor] = None,
    *,
    structure: Optional[Callable[[int, torch.device], Tensor]] = None,
    causal: bool = False,
) -> Optional[Tensor]:
    """Check a sequence block's inputs and combine its masks into the one it attends with.

    ::

        allowed[b, h, i, j] = mask[b, j] & attn_mask[b, h, i, j] & structure(N)[i, j] & (j <= i if causal)

    Shapes:
        x (B, N, D) with D = ``block.dim``; ``mask`` (B, N) boolean, True = a real token;
        ``attn_mask`` (N, N), (B, N, N) or (B, h, N, N) boolean, True = may attend (B and
        h = ``block.num_heads`` may be 1, broadcast); ``structure(N, device)`` the block's
        own (N, N) boolean mask (a band, a sparse pattern), called once x is checked.
        Returns ``allowed`` (B|1, h|1, N|1, N) boolean, True = may attend, or None when
        nothing masks (:func:`combine`).

    A wrong shape is a :class:`~framework.attention.ShapeError` naming the block, the tensor and
    both shapes (``mhsa: mask must have shape (2, 5), got (2, 4)``), a mask that is not
    boolean a ``ValueError``. Blocks built on :class:`~framework.attention.Attention` hand
    ``allowed`` on as its ``attn_mask`` and leave ``causal`` to it (its fused causal path);
    a block that attends in windows cuts its windows from ``allowed``; one that needs no
    (N, N) mask (the keys projected, or a linear-time path) calls it without ``attn_mask``
    for the checks, and gets at most the padding, (B, 1, 1, N).
    """
    name = block.block_name
    block.expect("x", x, "B N D", D=block.dim)
    b, n = x.shape[:2]
    if mask is not None:
        block.expect("mask", mask, "B N", B=b, N=n)
    if attn_mask is not None:
        heads = getattr(block, "num_heads", None)
        leading = attn_mask.shape[:-2]
        fits = (
            attn_mask.shape[-2:] == (n, n)
            and 2 <= attn_mask.dim() <= 4
            and leading[:1] in ((), (1,), (b,))
            and (attn_mask.dim() < 4 or heads is None or leading[1] in (1, heads))
        )
        if not fits:
            raise ShapeError(
                f"{name}: attn_mask must have shape ({n}, {n}), ({b}, {n}, {n}) or "
                f"({b}, {heads or 'h'}, {n}, {n}), got {tuple(attn_mask.shape)}"
            )
    return combine(
        name,
        mask,
        attn_mask,
        n,
        n,
        None if structure is None else structure(n, x.device),
        causal_mask(n, n, x.device) if causal else None,
    )
