"""Two independent forms of the criss-cross core, the baselines that tests and benchmarks
compare the library's block with. Both take q, k (B, C', H, W) and v (B, C, H, W) and give
(B, C, H, W): for each pixel, one softmax over the H + W - 1 pixels of its row and column
(the pixel itself counted once), no 1/sqrt(C') scale, and the weighted sum of their values.

``criss_cross_authors`` is the pure-PyTorch algorithm of the CCNet authors, re-written from its
description: row and column energies from batched matmuls over permuted copies of q, k and
v; the column branch adds a (B*W, H, H) -inf diagonal that is rebuilt on every call; one
softmax runs over the concatenated (H + W) energies; the outputs are permuted back and summed.

``criss_cross_einsum`` is the same computation as readable einsums over the (B, C, H, W)
tensors, with no permutation written by hand.

Not part of the library: it sits in ``tools`` (above the framework and the domains, which never
import it) so that the benchmarks measure against it and the tests check against it, both
importing it from here.
"""

from __future__ import annotations

import torch
from torch import Tensor


def criss_cross_authors(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """q, k (B, C', H, W), v (B, C, H, W) -> (B, C, H, W): sum over row and column of each pixel."""
    b, _, h, w = q.shape
    q_col = q.permute(0, 3, 1, 2).reshape(b * w, -1, h).transpose(1, 2)
    q_row = q.permute(0, 2, 1, 3).reshape(b * h, -1, w).transpose(1, 2)
    k_col, k_row = k.permute(0, 3, 1, 2).reshape(b * w, -1, h), k.permute(0, 2, 1, 3).reshape(b * h, -1, w)
    v_col, v_row = v.permute(0, 3, 1, 2).reshape(b * w, -1, h), v.permute(0, 2, 1, 3).reshape(b * h, -1, w)
    diagonal = (
        torch.diag(torch.full((h,), float("-inf"), device=q.device, dtype=q.dtype)).unsqueeze(0).repeat(b * w, 1, 1)
    )
    e_col = (torch.bmm(q_col, k_col) + diagonal).view(b, w, h, h).permute(0, 2, 1, 3)
    e_row = torch.bmm(q_row, k_row).view(b, h, w, w)
    a = torch.cat([e_col, e_row], 3).softmax(3)
    a_col = a[..., :h].permute(0, 2, 1, 3).reshape(b * w, h, h)
    a_row = a[..., h:].reshape(b * h, w, w)
    out_col = torch.bmm(v_col, a_col.transpose(1, 2)).view(b, w, -1, h).permute(0, 2, 3, 1)
    out_row = torch.bmm(v_row, a_row.transpose(1, 2)).view(b, h, -1, w).permute(0, 2, 1, 3)
    return out_col + out_row


def criss_cross_einsum(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """The same as :func:`criss_cross_authors`, written as einsums.

    ::

        e_col[b, i, j, g] = q[b, :, i, j] . k[b, :, g, j]     (-inf for g = i)
        e_row[b, i, j, l] = q[b, :, i, j] . k[b, :, i, l]
        a = softmax over the H + W entries of [e_col, e_row]
        y[b, :, i, j] = sum_g a_col[b, i, j, g] v[b, :, g, j] + sum_l a_row[b, i, j, l] v[b, :, i, l]
    """
    h = q.shape[2]
    own_pixel = torch.eye(h, dtype=torch.bool, device=q.device)[:, None, :]  # (i, 1, g)
    e_col = torch.einsum("bcij,bcgj->bijg", q, k).masked_fill(own_pixel, float("-inf"))
    e_row = torch.einsum("bcij,bcil->bijl", q, k)
    a_col, a_row = torch.cat([e_col, e_row], -1).softmax(-1).split([h, q.shape[3]], -1)
    return torch.einsum("bijg,bcgj->bcij", a_col, v) + torch.einsum("bijl,bcil->bcij", a_row, v)
